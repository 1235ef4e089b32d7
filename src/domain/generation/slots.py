"""A batch of slots, where requests join and leave a running decode between steps: :class:`SlotTable`.

For a model whose rows run at their own positions
(:func:`~jaxport.domain.generation.loop.per_row`) and a runner with slots
(:class:`~jaxport.domain.generation.ports.SlotRunner`): each request takes a
free slot; its prefill runs as one row (:func:`slot_prefill`), those of
requests that join at one step with prompts of one length as one batch of
rows where the runner takes it (:func:`same_length`, :func:`joined`), and
each cache row is copied into its slot; each decode then runs the first slots
that hold every request (:func:`decode_rows`, :func:`slot_decode`), a free
slot the pad token at position 0, a write into its own row that the next
request to take the slot overwrites. Each request picks its tokens with a
sampler of its own seed from its own row of the logits, so its tokens are
those of ``generate`` run alone, and ends at an end-of-text or stop token or
after its ``max_new_tokens``: its slot is free again. Pure: the runner and
the samplers are ports, and what follows each request (its stream, its
thread) is the caller's ``Owner``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from jaxport.domain.errors import GenerationError
from jaxport.domain.generation.loop import Layout, Rows, prefill_batch
from jaxport.domain.generation.ports import Sampler, SamplerFactory, SlotRunner, StepBatch
from jaxport.domain.generation.scheduling import FinishReason, GenerationRequest, StreamEvent
from jaxport.domain.generation.spec import GenerationSpec, StepInput
from jaxport.domain.ports import HostArray

#: What follows a request in a slot for the caller (a scheduler's job).
Owner = TypeVar("Owner")


def slot_prefill(spec: GenerationSpec, prompt: Sequence[int], layout: Layout) -> StepBatch:
    """The prefill of one prompt, as ``generate`` runs it alone (``layout`` from its check).

    >>> from jaxport.domain.generation.loop import Padding
    >>> spec = GenerationSpec(max_length=4)
    >>> slot_prefill(spec, [5, 6], Layout(Padding.NONE, 2))
    StepBatch(tokens=((5, 6),), positions=((0, 1),), mask=((1, 1, 0, 0),), last=(1,))
    """
    assert spec.max_length is not None
    return prefill_batch([prompt], Rows((len(prompt),), layout.length, layout.padding, spec.max_length), spec.pad_id)


def same_length(prompts: Sequence[tuple[int, Sequence[int]]]) -> list[list[int]]:
    """The slots of ``(slot, prompt)`` pairs grouped by their prompt's length, in the order each length
    first comes: the prefills that can run as one batch, each row as it runs alone.

    >>> same_length([(0, [1, 2]), (1, [3]), (2, [4, 5]), (3, [6, 7, 8])])
    [[0, 2], [1], [3]]
    """
    groups: dict[int, list[int]] = {}
    for slot, prompt in prompts:
        groups.setdefault(len(prompt), []).append(slot)
    return list(groups.values())


def joined(batches: Sequence[StepBatch]) -> StepBatch:
    """The rows of ``batches`` (of one token length) as one batch, in order.

    >>> joined([StepBatch(((5, 6),), ((0, 1),), (), (1,)), StepBatch(((7, 8),), ((0, 1),), (), (1,))])
    StepBatch(tokens=((5, 6), (7, 8)), positions=((0, 1), (0, 1)), mask=(), last=(1, 1))
    """
    return StepBatch(tuple(row for b in batches for row in b.tokens),
                     tuple(row for b in batches for row in b.positions),
                     tuple(row for b in batches for row in b.mask), tuple(i for b in batches for i in b.last))


def decode_rows(held: Sequence[bool]) -> int:
    """How many of the first slots a decode runs over: the smallest power of two (or all of them) that
    holds every held slot, so that a runtime compiles a few batch sizes, not one per count.

    >>> [decode_rows(h) for h in ([True, False, False, False, False], [False, False, True, False, False],
    ...                          [False, False, False, False, True], [False] * 2)]
    [1, 4, 5, 1]
    """
    last = max((i + 1 for i, h in enumerate(held) if h), default=1)
    rows = 1
    while rows < last:
        rows *= 2
    return min(rows, len(held))


def slot_decode(spec: GenerationSpec, rows: Sequence[tuple[int, int] | None]) -> StepBatch:
    """One decode over every slot: a held slot's ``(token, position)``, a free one (None) the pad token at 0;
    a mask over the cache only where the decode takes one (it is built at every step).

    >>> masked = (StepInput.TOKENS, StepInput.POSITIONS, StepInput.MASK, StepInput.CACHE)
    >>> slot_decode(GenerationSpec(max_length=3, pad_id=9, prefill_inputs=masked), [(4, 2), None])
    StepBatch(tokens=((4,), (9,)), positions=((2,), (0,)), mask=((1, 1, 1), (1, 0, 0)), last=(0, 0))
    >>> slot_decode(GenerationSpec(max_length=3, pad_id=9), [(4, 2), None]).mask
    ()
    """
    assert spec.max_length is not None
    held = [(spec.pad_id, 0) if row is None else row for row in rows]
    mask: tuple[tuple[int, ...], ...] = ()
    if spec.takes(spec.decode, StepInput.MASK):
        mask = tuple(tuple(1 if j <= position else 0 for j in range(spec.max_length)) for _, position in held)
    return StepBatch(tuple((token,) for token, _ in held), tuple((position,) for _, position in held), mask,
                     (0,) * len(held))


def padded_rows(batch: StepBatch, rows: int) -> StepBatch:
    """``batch`` (a decode over the first slots) grown to ``rows`` rows by repeating its last: for a runtime
    that runs every slot, whose slots past ``batch``'s hold no request (their writes are dropped); or a
    prefill grown to a row count that a runtime compiled for, the repeated row written into its own slot.

    >>> padded_rows(StepBatch(((4,),), ((2,),), ((1, 1, 1),), (0,)), 2)
    StepBatch(tokens=((4,), (4,)), positions=((2,), (2,)), mask=((1, 1, 1), (1, 1, 1)), last=(0, 0))
    """
    pad = rows - len(batch.tokens)
    return StepBatch(batch.tokens + batch.tokens[-1:] * pad, batch.positions + batch.positions[-1:] * pad,
                     batch.mask + batch.mask[-1:] * pad, batch.last + batch.last[-1:] * pad)


def slot_axes(spec: GenerationSpec) -> tuple[int, ...]:
    """Each cache leaf's batch axis: where a runner with slots copies a request's row of the cache.

    >>> from jaxport.domain.generation.spec import CacheLeaf
    >>> slot_axes(GenerationSpec(cache=(CacheLeaf("k", "float32", ("b", 8), 0, 1),)))
    (0,)

    Raises:
        GenerationError: a leaf has no batch axis: its rows are shared, so a request cannot take one of its own.
    """
    axes = tuple(leaf.batch_axis for leaf in spec.cache if leaf.batch_axis is not None)
    if len(axes) < len(spec.cache):
        raise GenerationError("prefill_slots", "a cache leaf of this model has no batch axis: its rows are "
                                               "shared, so a request cannot take one row of its own")
    return axes


@dataclass(slots=True)
class _Row(Generic[Owner]):
    """A request in a slot: its prefill, how it picks, what ends it, where its next decode writes."""

    owner: Owner
    request: GenerationRequest
    prefill: StepBatch
    sampler: Sampler
    ends: frozenset[int]
    position: int
    token: int = 0
    count: int = 0
    counts: dict[int, int] = field(default_factory=dict)


class SlotTable(Generic[Owner]):
    """The requests in a batch of slots and the steps that advance them (see the module's docstring).

    Args:
        spec: the model's generation spec (:func:`~jaxport.domain.generation.loop.per_row`).
        runner: its runner, with slots: the table's alone.
        samplers: what makes each request's sampler from its seed.
        slots: the rows of the decode batch: how many requests run at once.
    """

    def __init__(self, spec: GenerationSpec, runner: SlotRunner, samplers: SamplerFactory, slots: int) -> None:
        self._spec = spec
        self._runner = runner
        self._samplers = samplers
        self._slots = slots
        self._rows: dict[int, _Row[Owner]] = {}  # by slot: the slots held

    def start(self) -> list[Owner]:
        """Frees every slot and makes the runner's cache afresh: the owners of the requests it held."""
        held = [owner for _, owner in self.held()]
        self._rows.clear()
        self._runner.start(self._slots)
        return held

    def free(self) -> list[int]:
        """The free slots, in order."""
        return [slot for slot in range(self._slots) if slot not in self._rows]

    def held(self) -> list[tuple[int, Owner]]:
        """The slots that hold a request, in order, and its owner."""
        return [(slot, self._rows[slot].owner) for slot in sorted(self._rows)]

    def take(self, joining: Sequence[tuple[Owner, GenerationRequest, Layout]]) -> list[list[int]]:
        """Puts each checked request (``layout`` from its check) into the next free slot: the groups of
        slots whose prefills :meth:`prefill` runs, each as one batch where the runner takes it."""
        free = self.free()
        assert len(joining) <= len(free), f"{len(joining)} requests for {len(free)} free slots"
        for slot, (owner, request, layout) in zip(free, joining):
            self._rows[slot] = _Row(owner, request, slot_prefill(self._spec, request.prompt, layout),
                                    self._samplers(request.options.seed),
                                    frozenset(self._spec.eos_ids + request.stop), len(request.prompt))
        return same_length([(slot, request.prompt) for slot, (_, request, _) in zip(free, joining)])

    def prefill(self, group: Sequence[int]) -> list[tuple[Owner, StreamEvent]]:
        """Runs the prefills of ``group`` (slots of :meth:`take`, prompts of one length) into their slots:
        one batch where the runner's prefill takes several rows, else one row at a time; each request
        picks its first token (the events of :meth:`decode`).

        Raises:
            Exception: what the runner raises (then :meth:`start` again: the cache is the runner's).
        """
        prefill = self._spec.prefill
        batches = [self._rows[slot].prefill for slot in group]
        if len(group) > 1 and self._runner.prefills_together:
            logits = self._runner.prefill_slots(group, prefill, joined(batches))
            picks = [(slot, logits, i) for i, slot in enumerate(group)]
        else:
            picks = [(slot, self._runner.prefill_slots([slot], prefill, b), 0) for slot, b in zip(group, batches)]
        return [event for slot, logits, index in picks for event in self._advance(slot, logits, index)]

    def decode(self) -> list[tuple[Owner, StreamEvent]]:
        """One decode step over the first slots that hold every request (:func:`decode_rows`: a request
        takes the first free slot, so those in use gather at the front); each request picks its next token:
        per request, its token, then its end where it ended (its slot is free again), or its end alone
        where it picked an end-of-text or stop token (not emitted).

        Raises:
            Exception: what the runner raises (then :meth:`start` again).
        """
        spec = self._spec
        rows = decode_rows([slot in self._rows for slot in range(self._slots)])
        held = [self._rows.get(slot) for slot in range(rows)]
        batch = slot_decode(spec, [None if row is None else (row.token, row.position) for row in held])
        logits = self._runner.step(spec.decode, batch) if rows == self._slots else \
            self._runner.step_first(spec.decode, batch)
        events = []
        for slot, row in enumerate(held):
            if row is not None:
                row.position += 1
                events += self._advance(slot, logits, slot)
        return events

    def drop(self, slot: int) -> Owner:
        """Frees ``slot`` (a request cancelled): the owner of the request it held."""
        return self._rows.pop(slot).owner

    def _advance(self, slot: int, logits: HostArray, index: int) -> list[tuple[Owner, StreamEvent]]:
        """The slot's request picks its token from row ``index`` of ``logits``; its slot freed where it ends."""
        row = self._rows[slot]
        options = row.request.options
        token = row.sampler.pick_row(logits, index, options, options.offsets(row.counts)) if options.adjusted \
            else row.sampler.pick_row(logits, index, options)
        if token in row.ends:
            del self._rows[slot]
            return [(row.owner, StreamEvent(None, FinishReason.STOP))]
        row.count, row.token = row.count + 1, token
        row.counts[token] = row.counts.get(token, 0) + 1
        logprob = None if options.logprobs is None else row.sampler.logprob(logits, index, token, options.logprobs)
        if row.count < row.request.max_new_tokens:
            return [(row.owner, StreamEvent(token, logprob=logprob))]
        del self._rows[slot]
        return [(row.owner, StreamEvent(token, logprob=logprob)), (row.owner, StreamEvent(None, FinishReason.LENGTH))]
