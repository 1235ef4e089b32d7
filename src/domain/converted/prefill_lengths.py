"""The prompt lengths a converted prefill was compiled for (targets of static shapes: LiteRT, IREE).

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
    """
    at = spec.prefill_inputs.index(StepInput.TOKENS)  # the tokens come before the cache's leaves
    if spec.prefill_inputs.index(StepInput.CACHE) < at:
        at += len(spec.cache) - 1
    rows, length = (prefill.signature.in_avals[at].shape + ("1",))[:2]
    if length.isdigit():
        return (int(length),)
    if all(not v.dims for v in prefill.variants):
        return None
    found = {v.binding[length] for v in prefill.variants if length in v.binding
             and (rows.isdigit() and int(rows) == batch or v.binding.get(rows) == batch)}
    return tuple(sorted(found))
