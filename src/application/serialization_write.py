"""Writing an :class:`Exported` as an artifact record and bytes, in jax.export's format.

Apart from reading (:mod:`jaxport.application.serialization`), so that
``Exported.serialize`` can use it without an import cycle: this module knows
:class:`Exported` only by its attributes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..adapters.flatbuffers_codec import encode_artifact
from ..adapters.jax_records import aval_record, effect_record, sharding_record
from ..adapters.jax_versions import this_producer
from ..domain.artifact import ArtifactRecord
from ..domain.errors import VjpUnavailableError
from ..domain.integrity import Extension, seal
from ..domain.symbolic import SymbolicScope
from .pytree_registry import PytreeSerializationRegistry
from .wiring import default_registry

if TYPE_CHECKING:
    from .exported import Exported


def to_record(exp: Exported, vjp_order: int, registry: PytreeSerializationRegistry) -> ArtifactRecord:
    """The artifact record of ``exp`` with VJPs nested to ``vjp_order``.

    Raises:
        VjpUnavailableError: ``exp`` cannot provide VJPs of that order.
        ValueError: a pytree node type is not registered for serialization.
        NonStringKeyError: a pytree holds a dict with a key that is not a string.
    """
    if vjp_order < 0:
        raise ValueError(f"vjp_order must be >= 0, got {vjp_order}")
    chain = [exp]
    while len(chain) <= vjp_order:
        if not chain[-1].has_vjp():
            raise VjpUnavailableError(
                f"Cannot serialize '{exp.fun_name}' with vjp_order={vjp_order}: it carries VJPs "
                f"up to order {len(chain) - 1} only. Serialize the in-process export, or load an "
                "artifact that was serialized with a vjp_order at least that high.")
        chain.append(chain[-1].vjp())
    vjp = None
    for link in reversed(chain[1:]):
        vjp = _record(link, vjp, registry)
    return _record(exp, vjp, registry)


def _record(exp: Exported, vjp: ArtifactRecord | None, registry: PytreeSerializationRegistry) -> ArtifactRecord:
    return ArtifactRecord(
        function_name=exp.fun_name,
        in_tree=registry.args_spec(exp.in_tree),
        in_avals=tuple(aval_record(a) for a in exp.in_avals),
        out_tree=registry.to_spec(exp.out_tree, where="result"),
        out_avals=tuple(aval_record(a) for a in exp.out_avals),
        in_shardings=tuple(sharding_record(s) for s in exp.in_shardings),
        out_shardings=tuple(sharding_record(s) for s in exp.out_shardings),
        nr_devices=exp.nr_devices,
        platforms=exp.platforms,
        ordered_effects=tuple(effect_record(e) for e in exp.ordered_effects),
        unordered_effects=tuple(effect_record(e) for e in exp.unordered_effects),
        disabled_checks=exp.disabled_safety_checks,
        mlir_module_serialized=exp.mlir_module_serialized,
        calling_convention_version=exp.calling_convention_version,
        module_kept_var_idx=exp.module_kept_var_idx,
        uses_global_constants=exp.uses_global_constants,
        vjp=vjp,
        constraints=_constraints_of(exp.in_avals),
    )


def _constraints_of(avals: Sequence[Any]) -> tuple[str, ...]:
    """The texts of the constraints of the scope that the symbolic dimensions share."""
    for aval in avals:
        for d in aval.shape:
            scope = getattr(d, "scope", None)
            if isinstance(scope, SymbolicScope):
                return tuple(c.text for c in scope.constraints)
    return ()


def serialize(exp: Exported, vjp_order: int = 0,
              registry: PytreeSerializationRegistry | None = None, *,
              integrity: bool = True) -> bytearray:
    """The bytes of ``exp`` in jax.export's format (``jax.export.deserialize`` reads them).

    Args:
        exp: the export.
        vjp_order: how many orders of VJP to include.
        registry: the pytree serialization registry (default: the global one).
        integrity: append the jaxport trailer (:mod:`jaxport.domain.integrity`):
            a digest checked on load, the symbolic constraints and the versions
            that wrote it. False gives the bytes ``jax.export``'s
            ``serialize()`` writes, without any of them.
    """
    record = to_record(exp, vjp_order, registry or default_registry())
    if not integrity:
        return encode_artifact(record)
    return seal(encode_artifact(record), Extension(_chain_constraints(record), this_producer()))


def _chain_constraints(record: ArtifactRecord) -> tuple[tuple[str, ...], ...]:
    levels = []
    link: ArtifactRecord | None = record
    while link is not None:
        levels.append(link.constraints)
        link = link.vjp
    return tuple(levels)
