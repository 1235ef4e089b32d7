"""Requests that join a running decode batch between steps: :class:`ContinuousScheduler`.

For a model whose rows run at their own positions and a runner with slots
(:class:`~jaxport.domain.generation.ports.SlotRunner`): the worker holds a
cache of ``max_slots`` rows. Before each decode step, each free slot takes the
oldest queued request: its prefill runs (one row; the requests taken at one
step whose prompts have one length as one batch, where the runner's prefill
takes any batch) and its cache row is copied into the slot, and it decodes
with the others from the next step on. A
request that ends (a stop token, its length, cancelled) frees its slot for the
next one. Each request picks its tokens with a sampler of its own seed, from
its own row of the logits: its tokens are those of ``generate`` run alone.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from jaxport.application.generation.admission import Job, WorkerScheduler, check_count, model_failed
from jaxport.application.generation.generator import Generator
from jaxport.domain.errors import GenerationError
from jaxport.domain.generation.ports import Sampler, SlotRunner, StepBatch
from jaxport.domain.ports import HostArray
from jaxport.domain.generation.scheduling import FinishReason
from jaxport.domain.generation.slots import decode_rows, joined, same_length, slot_decode, slot_prefill


@dataclass(slots=True)
class _Row:
    """A request in a slot: how it picks, what ends it, where its next decode writes."""

    job: Job
    sampler: Sampler
    ends: frozenset[int]
    started: float
    position: int
    token: int = 0
    count: int = 0


class ContinuousScheduler(WorkerScheduler):
    """A :class:`~jaxport.domain.generation.scheduling.Scheduler` whose requests join between steps.

    Args:
        generator: the model (its runner is the worker thread's alone from now on).
        runner: the generator's runner, with slots.
        max_slots: the rows of the decode batch: how many requests run at once.
        max_queue: how many requests may wait for a slot.

    Attributes:
        decode_steps: the decode steps run so far.
    """

    continuous = True

    def __init__(self, generator: Generator, runner: SlotRunner, max_slots: int, max_queue: int) -> None:
        self._generator = generator
        self._runner = runner
        check_count("max_slots", max_slots, 1)
        self._rows: list[_Row | None] = [None] * max_slots
        self.decode_steps = 0
        super().__init__(lambda r: generator.check([r.prompt], r.max_new_tokens, r.options, r.stop), max_slots,
                         max_queue)

    def _serve(self) -> None:
        self._runner.start(len(self._rows))
        while True:
            self._admit()
            for slot, row in enumerate(self._rows):
                if row is not None and (row.job.cancelled.is_set() or self.past_grace()):
                    self._free(slot, FinishReason.CANCELLED)
            if all(row is None for row in self._rows):
                if self._done():
                    return
                continue
            self._decode()

    def _admit(self) -> None:
        """Each free slot takes the oldest queued request (waiting for one while no slot is held), and
        the requests taken are prefilled into their slots."""
        free = [slot for slot, row in enumerate(self._rows) if row is None]
        taken: list[tuple[int, Job]] = []
        while len(taken) < len(free):
            job = self._take(block=not taken and len(free) == len(self._rows))
            if job is None:
                break
            if job.cancelled.is_set():
                job.finish(FinishReason.CANCELLED)
                self._release(time.monotonic())
                continue
            taken.append((free[len(taken)], job))
        if taken:
            self._join(taken)

    def _join(self, taken: list[tuple[int, Job]]) -> None:
        """Prefills each job into its slot, and each picks its first token from its row of the logits."""
        spec = self._generator.spec
        batches: dict[int, StepBatch] = {}
        for slot, job in taken:
            r = job.request
            self._rows[slot] = _Row(job, self._generator.samplers(r.options.seed),
                                    frozenset(spec.eos_ids + r.stop), time.monotonic(), len(r.prompt))
        requests = {slot: job.request for slot, job in taken}
        for group in same_length([(slot, r.prompt) for slot, r in requests.items()]):
            try:
                for slot in group:
                    r = requests[slot]
                    layout = self._generator.check([r.prompt], r.max_new_tokens, r.options, r.stop)
                    batches[slot] = slot_prefill(spec, r.prompt, layout)
                picks = self._prefill(group, batches)
            except Exception as exc:
                self._fail_all(exc)
                return
            for slot, logits, index in picks:
                self._advance(slot, logits, index)

    def _prefill(self, group: list[int], batches: dict[int, StepBatch]) -> list[tuple[int, HostArray, int]]:
        """The prefills of ``group``'s slots (prompts of one length): one batch where the runner takes
        several rows, else one row at a time; each slot's logits and the index of its row in them."""
        prefill = self._generator.spec.prefill
        if len(group) > 1 and self._runner.prefills_together:
            logits = self._runner.prefill_slots(group, prefill, joined([batches[slot] for slot in group]))
            return [(slot, logits, i) for i, slot in enumerate(group)]
        return [(slot, self._runner.prefill_slot(slot, prefill, batches[slot]), 0) for slot in group]

    def _decode(self) -> None:
        """One decode step over the first slots that hold every request (:func:`decode_rows`: a free slot
        takes the first free one, so those in use gather at the front); each held slot picks its next token."""
        spec = self._generator.spec
        rows = decode_rows([row is not None for row in self._rows])
        batch = slot_decode(spec, [None if row is None else (row.token, row.position) for row in self._rows[:rows]])
        try:
            logits = self._runner.step(spec.decode, batch) if rows == len(self._rows) else \
                self._runner.step_first(spec.decode, batch)
        except Exception as exc:
            self._fail_all(exc)
            return
        self.decode_steps += 1
        for slot, row in enumerate(self._rows[:rows]):
            if row is not None:
                row.position += 1
                self._advance(slot, logits, slot)

    def _advance(self, slot: int, logits: HostArray, index: int) -> None:
        """The slot's request picks its token from row ``index`` of ``logits``: emitted, or its end."""
        row = self._rows[slot]
        assert row is not None
        request = row.job.request
        token = row.sampler.pick_row(logits, index, request.options)
        if token in row.ends:
            self._free(slot, FinishReason.STOP)
            return
        row.job.emit(token)
        row.count += 1
        row.token = token
        if row.count == request.max_new_tokens:
            self._free(slot, FinishReason.LENGTH)

    def _free(self, slot: int, reason: FinishReason) -> None:
        row = self._rows[slot]
        assert row is not None
        self._rows[slot] = None
        row.job.finish(reason)
        self._release(row.started)

    def _fail_all(self, exc: Exception) -> None:
        """The runtime failed: every request in a slot ends with the error, and the cache starts afresh."""
        error = exc if isinstance(exc, GenerationError) else model_failed(exc)
        for slot, row in enumerate(self._rows):
            if row is not None:
                self._rows[slot] = None
                row.job.fail(error)
                self._release(row.started)
        self._runner.start(len(self._rows))
