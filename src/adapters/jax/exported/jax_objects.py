"""An export's record as JAX objects, and the record of an export made from JAX objects.

:class:`JaxObjects` is what JAX needs of an export and the record holds in
wire terms: tree definitions, ``ShapedArray``\\ s (symbolic dimensions as
``JaxDim`` expressions sharing one scope with the record's constraints),
shardings and effect objects. An export made in this process starts from
them (the very objects of its lowering) and :func:`in_process_record` records
them, converting on first read what may fail or cost (see
:mod:`jaxport.domain.deferred`); a deserialized one starts from its record and
:func:`jax_objects_of` makes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
from jax.core import ShapedArray
from jax.sharding import NamedSharding

from jaxport.adapters.jax import internals as jax_internals
from jaxport.adapters.jax.records import (
    aval_record, constraints_of, effect_record, jax_aval, jax_effect, jax_sharding, parse_shapes,
    sharding_record
)
from jaxport.adapters.mlir.module import MlirStableHlo
from jaxport.adapters.jax.versions import written_format
from jaxport.domain.artifact import calling_convention
from jaxport.domain.artifact.record import ArtifactRecord
from jaxport.domain.deferred import Deferred
from jaxport.domain.errors import ArtifactError, CallingConventionError
from jaxport.domain.artifact.module_format import check_portable_artifact
from jaxport.domain.artifact.safety import DisabledSafetyCheck
from jaxport.adapters.jax.trees.registry import PytreeSerializationRegistry
from jaxport.adapters.jax.trees.registry import default_registry


@dataclass(frozen=True, slots=True)
class JaxObjects:
    """The JAX objects of an export: its signature as JAX takes it.

    Attributes:
        in_tree: the pytree of ``(args, kwargs)``.
        in_avals: the flat input abstract values.
        out_tree: the pytree of the results.
        out_avals: the flat output abstract values.
        in_shardings: one ``NamedSharding`` over an abstract mesh per flat
            input, None where unspecified (a legacy ``HloShardingRecord`` for
            artifacts written before named shardings were recorded).
        out_shardings: the same per flat output.
        ordered_effects: the effects ``main`` threads tokens for.
        unordered_effects: the other effects.
    """

    in_tree: jax.tree_util.PyTreeDef
    in_avals: tuple[ShapedArray, ...]
    out_tree: jax.tree_util.PyTreeDef
    out_avals: tuple[ShapedArray, ...]
    in_shardings: tuple[Any, ...]
    out_shardings: tuple[Any, ...]
    ordered_effects: tuple[Any, ...] = ()
    unordered_effects: tuple[Any, ...] = ()


def in_process_record(jax_objects: JaxObjects, module: bytes | Deferred[bytes], *, function_name: str,
                      nr_devices: int, platforms: tuple[str, ...],
                      disabled_checks: tuple[DisabledSafetyCheck, ...], calling_convention_version: int,
                      module_kept_var_idx: tuple[int, ...], uses_global_constants: bool) -> ArtifactRecord:
    """The record of an export made in this process from ``jax_objects`` and its module.

    The trees (with the default pytree registry of the moment), avals and
    effects are converted on first read, so that what the artifact format
    cannot hold fails only where the record is read (serialization), never
    the export or its calls.
    """
    j = jax_objects
    serialization_version, jax_version = written_format()
    return ArtifactRecord(
        function_name=function_name,
        in_tree=Deferred(lambda: default_registry().args_spec(j.in_tree)),
        in_avals=Deferred(lambda: tuple(aval_record(a) for a in j.in_avals)),
        out_tree=Deferred(lambda: default_registry().to_spec(j.out_tree, where="result")),
        out_avals=Deferred(lambda: tuple(aval_record(a) for a in j.out_avals)),
        in_shardings=tuple(sharding_record(s) for s in j.in_shardings),
        out_shardings=tuple(sharding_record(s) for s in j.out_shardings),
        nr_devices=nr_devices,
        platforms=platforms,
        ordered_effects=Deferred(lambda: tuple(effect_record(e) for e in j.ordered_effects)),
        unordered_effects=Deferred(lambda: tuple(effect_record(e) for e in j.unordered_effects)),
        disabled_checks=disabled_checks,
        mlir_module_serialized=module,
        calling_convention_version=calling_convention_version,
        module_kept_var_idx=module_kept_var_idx,
        uses_global_constants=uses_global_constants,
        constraints=constraints_of(j.in_avals),
        serialization_version=serialization_version,
        jax_version=jax_version,
    )


def jax_objects_of(record: ArtifactRecord, registry: PytreeSerializationRegistry) -> JaxObjects:
    """The JAX objects of a record read from an artifact (one table: not its VJP's).

    Raises:
        ArtifactError: the record's calling convention is not supported, its
            module is not a portable artifact this jaxlib reads, a dimension or
            constraint does not parse, it names a pytree node type or effect
            not registered here, or JAX refuses one of its shardings or avals.
    """
    try:
        calling_convention.check_version(record.calling_convention_version,
                                         when="deserialized artifact's")
    except CallingConventionError as exc:
        raise ArtifactError(str(exc)) from exc
    check_portable_artifact(record.mlir_module_serialized,
                            newest_readable=MlirStableHlo.newest_readable_version())
    shapes = parse_shapes(record.in_avals + record.out_avals, record.constraints)
    try:
        in_shardings = tuple(jax_sharding(s) for s in record.in_shardings)
        out_shardings = tuple(jax_sharding(s) for s in record.out_shardings)
        nr_in = len(record.in_avals)
        in_avals = tuple(jax_aval(r, shape, _named(s))
                         for r, shape, s in zip(record.in_avals, shapes[:nr_in], in_shardings))
        out_avals = tuple(jax_aval(r, shape, _named(s))
                          for r, shape, s in zip(record.out_avals, shapes[nr_in:], out_shardings))
    except (ValueError, TypeError, KeyError, IndexError) as exc:  # JAX refuses a mesh, spec or aval
        raise ArtifactError(f"The artifact of '{record.function_name}' records a sharding or "
                            f"abstract value that JAX refuses: {exc}") from exc
    known_effects = jax_internals.lowerable_effect_types()
    return JaxObjects(
        in_tree=registry.to_treedef(record.in_tree, in_avals),
        in_avals=in_avals,
        out_tree=registry.to_treedef(record.out_tree, out_avals),
        out_avals=out_avals,
        in_shardings=in_shardings,
        out_shardings=out_shardings,
        ordered_effects=tuple(jax_effect(e, known_effects) for e in record.ordered_effects),
        unordered_effects=tuple(jax_effect(e, known_effects) for e in record.unordered_effects),
    )


def _named(sharding: Any) -> NamedSharding | None:
    return sharding if isinstance(sharding, NamedSharding) else None
