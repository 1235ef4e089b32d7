"""Requests that join a running decode batch between steps: :class:`ContinuousScheduler`.

For a model whose rows run at their own positions and a runner with slots
(:class:`~jaxport.domain.generation.ports.SlotRunner`): the worker thread
runs the domain's table of ``max_slots`` slots
(:class:`~jaxport.domain.generation.slots.SlotTable`: the prefills, the
decodes, each request's tokens and end). Before each decode step, each free
slot takes the oldest queued request; a request that ends (a stop token, its
length, cancelled) frees its slot for the next one. This module is the
thread's part: taking the queued jobs, cancelling, handing each job its
tokens and its end, and a failed runtime.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from jaxport.application.generation.admission import Job, WorkerScheduler, model_failed
from jaxport.application.generation.generator import Generator
from jaxport.domain.errors import GenerationError
from jaxport.domain.generation.ports import SlotRunner
from jaxport.domain.generation.scheduling import FinishReason, StreamEvent
from jaxport.domain.generation.slots import SlotTable


class ContinuousScheduler(WorkerScheduler):
    """A :class:`~jaxport.domain.generation.scheduling.Scheduler` whose requests join between steps.

    Args:
        generator: the model (its runner is the worker thread's alone from now on).
        runner: the generator's runner, with slots.
        max_slots: the rows of the decode batch: how many requests run at once.
        max_queue: how many requests may wait for a slot.
    """

    continuous = True

    def __init__(self, generator: Generator, runner: SlotRunner, max_slots: int, max_queue: int) -> None:
        self._table: SlotTable[Job] = SlotTable(generator.spec, runner, generator.samplers, max_slots)
        super().__init__(generator, max_slots, max_queue)

    def _serve(self) -> None:
        self._table.start()
        while True:
            self._admit()
            for slot, job in self._table.held():
                if job.cancelled.is_set() or self.past_grace():
                    self._end(self._table.drop(slot), FinishReason.CANCELLED)
            if not self._table.held():
                if self._done():
                    return
                continue
            self._step(self._table.decode)

    def _admit(self) -> None:
        """Each free slot takes the oldest queued request (waiting for one while no slot is held), and
        the requests taken are prefilled into their slots."""
        free = len(self._table.free())
        taken: list[Job] = []
        while len(taken) < free:
            job = self._take(block=not taken and not self._table.held())
            if job is None:
                break
            if job.cancelled.is_set():
                self._end(job, FinishReason.CANCELLED)
                continue
            taken.append(job)
        for group in self._table.take([(job, job.request, job.layout) for job in taken]):
            if not self._step(partial(self._table.prefill, group)):
                return

    def _step(self, step: Callable[[], list[tuple[Job, StreamEvent]]]) -> bool:
        """Runs a step of the table and hands each job what it did; False where the runtime failed: every
        request in a slot then ends with the error, and the cache starts afresh."""
        try:
            events = step()
        except Exception as exc:
            error = exc if isinstance(exc, GenerationError) else model_failed(exc)
            for job in self._table.start():
                job.fail(error)
                self._release(job)
            return False
        for job, event in events:
            if event.token is not None:
                job.emit(event.token, event.logprob)
            if event.finish is not None:
                self._end(job, event.finish)
        return True

    def _end(self, job: Job, reason: FinishReason) -> None:
        job.finish(reason)
        self._release(job)
