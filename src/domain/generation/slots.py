"""The step inputs of a batch of slots, where requests join and leave a running decode between steps.

For a model whose rows run at their own positions
(:func:`~jaxport.domain.generation.loop.per_row`): a request's prefill runs
as one row (:func:`slot_prefill`), those of requests that join at one step
with prompts of one length as one batch of rows (:func:`same_length`,
:func:`joined`), and each cache row is copied into a free slot; each decode
then runs the first slots that hold every request
(:func:`decode_rows`, :func:`slot_decode`), a free
slot the pad token at position 0, a write into its own row that the next
request to take the slot overwrites.
"""

from __future__ import annotations

from collections.abc import Sequence

from jaxport.domain.generation.loop import Layout, Rows, prefill_batch
from jaxport.domain.generation.ports import StepBatch
from jaxport.domain.generation.spec import GenerationSpec, StepInput


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
