"""Reading a whole :class:`Exported` from jax.export's artifact format (writing: serialization_write.py)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..adapters import jax_internals
from ..adapters.jax_dims import JaxDim
from ..adapters.flatbuffers_codec import decode_artifact
from ..adapters.jax_records import jax_aval, jax_effect, jax_sharding
from ..adapters.mlir_module import StableHloSerializer
from ..domain import calling_convention
from ..domain.module_format import check_portable_artifact
from ..domain.artifact import ArtifactRecord, AvalRecord
from ..domain.errors import ArtifactError, CallingConventionError
from ..domain.runtime_calls import record_shapes
from .exported import Exported
from .pytree_registry import PytreeSerializationRegistry, default_registry
from .serialization_write import serialize as serialize, to_record as to_record


def parse_shapes(avals: Sequence[AvalRecord], constraints: Sequence[str] = ()
                 ) -> list[tuple[Any, ...]]:
    """The dimensions of one table's avals, symbolic ones as JAX's dimensions
    (:func:`jaxport.domain.runtime_calls.record_shapes`).

    Raises:
        ArtifactError: a dimension or a constraint does not parse.
    """
    return list(record_shapes(avals, constraints, expr_class=JaxDim))


def from_record(record: ArtifactRecord, registry: PytreeSerializationRegistry) -> Exported:
    """The :class:`Exported` of an artifact record.

    Raises:
        ArtifactError: the record's calling convention is not supported, it
            names an unregistered pytree node type or effect.
    """
    try:
        version = calling_convention.check_version(record.calling_convention_version,
                                                   when="deserialized artifact's")
    except CallingConventionError as exc:
        raise ArtifactError(str(exc)) from exc
    check_portable_artifact(record.mlir_module_serialized,
                            newest_readable=StableHloSerializer.newest_readable_version())
    shapes = parse_shapes(record.in_avals + record.out_avals, record.constraints)
    try:
        in_shardings, out_shardings, in_avals, out_avals = _jax_signature(record, shapes)
    except ArtifactError:
        raise
    except (ValueError, TypeError, KeyError, IndexError) as exc:  # JAX refuses a mesh, spec or aval
        raise ArtifactError(f"The artifact of '{record.function_name}' records a sharding or "
                            f"abstract value that JAX refuses: {exc}") from exc
    known_effects = jax_internals.lowerable_effect_types()
    vjp_record = record.vjp
    return Exported(
        fun_name=record.function_name,
        in_tree=registry.to_treedef(record.in_tree, in_avals),
        in_avals=in_avals,
        out_tree=registry.to_treedef(record.out_tree, out_avals),
        out_avals=out_avals,
        in_shardings=in_shardings,
        out_shardings=out_shardings,
        nr_devices=record.nr_devices,
        platforms=record.platforms,
        ordered_effects=tuple(jax_effect(e, known_effects) for e in record.ordered_effects),
        unordered_effects=tuple(jax_effect(e, known_effects) for e in record.unordered_effects),
        disabled_safety_checks=record.disabled_checks,
        mlir_module_serialized=record.mlir_module_serialized,
        calling_convention_version=version,
        module_kept_var_idx=record.module_kept_var_idx,
        uses_global_constants=record.uses_global_constants,
        _get_vjp=None if vjp_record is None else (lambda _: from_record(vjp_record, registry)),
    )


def _jax_signature(record: ArtifactRecord, shapes: list[tuple[Any, ...]]
                   ) -> tuple[tuple[Any, ...], tuple[Any, ...], tuple[Any, ...], tuple[Any, ...]]:
    """(in_shardings, out_shardings, in_avals, out_avals) as JAX objects."""
    in_shardings = tuple(jax_sharding(s) for s in record.in_shardings)
    out_shardings = tuple(jax_sharding(s) for s in record.out_shardings)
    nr_in = len(record.in_avals)
    in_avals = tuple(jax_aval(r, shape, _named(s))
                     for r, shape, s in zip(record.in_avals, shapes[:nr_in], in_shardings))
    out_avals = tuple(jax_aval(r, shape, _named(s))
                      for r, shape, s in zip(record.out_avals, shapes[nr_in:], out_shardings))
    return in_shardings, out_shardings, in_avals, out_avals


def _named(sharding: Any) -> Any:
    from jax.sharding import NamedSharding

    return sharding if isinstance(sharding, NamedSharding) else None


def deserialize(blob: bytes | bytearray | memoryview,
                registry: PytreeSerializationRegistry | None = None, *,
                verify: bool = False, allowed_custom_calls: Iterable[str] = ()) -> Exported:
    """An :class:`Exported` from bytes written by jaxport or ``jax.export``.

    The jaxport trailer's digest, when present, is checked before anything
    else, and its symbolic constraints are restored.

    Args:
        blob: the artifact's bytes.
        registry: the pytree serialization registry (default: the global one).
        verify: also parse and check every module in a separate process
            first (see :func:`jaxport.application.verification.verify_artifact`);
            use it for bytes from a source you do not control.
        allowed_custom_calls: with ``verify``, the custom-call targets to accept
            besides those JAX guarantees stable; the artifact's own disabled
            safety checks are not trusted for that.

    Raises:
        ArtifactError: the bytes are not a valid artifact, fail verification,
            or use a version, pytree node type or effect that this process
            does not support.
    """
    if verify:
        from .verification import verify_artifact

        record = verify_artifact(blob, allowed_custom_calls=allowed_custom_calls).raise_if_failed()
    else:
        record = decode_artifact(blob)
    return from_record(record, registry or default_registry())
