"""The prompt lengths and batch sizes a converted prefill was compiled for (targets of static shapes: LiteRT, IREE).

A prompt shorter than a compiled length is padded to it (:mod:`jaxport.domain.generation.loop`); a
model that takes neither a mask nor positions cannot be padded, and a prompt
longer than every compiled length cannot run: both are typed errors that name
the lengths there are.
"""

from __future__ import annotations

from .manifest import ConvertedFunction
from jaxport.domain.generation.spec import GenerationSpec, StepInput


def prefill_lengths(spec: GenerationSpec, prefill: ConvertedFunction, batch: int) -> tuple[int, ...] | None:
    """The prompt lengths that ``prefill`` runs for ``batch`` rows, in increasing order (None: any).

    >>> from jaxport.domain.artifact.record import AvalRecord, DType, TreeSpec
    >>> from jaxport.domain.calls.signature import Signature
    >>> from .manifest import Variant
    >>> leaf = TreeSpec.leaf()
    >>> sig = Signature("prefill", TreeSpec.of_tuple(TreeSpec.of_tuple(leaf), TreeSpec.of_dict({})),
    ...                 (AvalRecord(("b", "s"), DType.INT32),), leaf, (AvalRecord(("b", "s", "8"), DType.FLOAT32),))
    >>> variants = (Variant("p0", (("b", 1), ("s", 8))), Variant("p1", (("b", 1), ("s", 4))),
    ...             Variant("p2", (("b", 2), ("s", 16))))
    >>> spec = GenerationSpec(prefill_inputs=(StepInput.TOKENS, StepInput.CACHE))
    >>> prefill_lengths(spec, ConvertedFunction(sig, variants), 1)
    (4, 8)
    >>> prefill_batches(spec, ConvertedFunction(sig, variants))
    (1, 2)
    """
    rows, length = (_tokens_shape(spec, prefill) + ("1",))[:2]
    if length.isdigit():
        return (int(length),)
    if all(not v.dims for v in prefill.variants):
        return None
    found = {v.binding[length] for v in prefill.variants if length in v.binding
             and (rows.isdigit() and int(rows) == batch or v.binding.get(rows) == batch)}
    return tuple(sorted(found))


def prefill_batches(spec: GenerationSpec, prefill: ConvertedFunction) -> tuple[int, ...] | None:
    """The batch sizes that ``prefill`` was compiled for, in increasing order (None: any); see
    :func:`prefill_lengths`'s example."""
    rows = _tokens_shape(spec, prefill)[0]
    if rows.isdigit():
        return (int(rows),)
    if all(not v.dims for v in prefill.variants):
        return None
    return tuple(sorted({v.binding[rows] for v in prefill.variants if rows in v.binding}))


def _tokens_shape(spec: GenerationSpec, prefill: ConvertedFunction) -> tuple[str, ...]:
    """The shape of the prefill's tokens (the tokens come before the cache's leaves, or after them)."""
    at = spec.prefill_inputs.index(StepInput.TOKENS)
    if spec.prefill_inputs.index(StepInput.CACHE) < at:
        at += len(spec.cache) - 1
    return prefill.signature.in_avals[at].shape
