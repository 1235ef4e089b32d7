"""An export as JAX holds it (:class:`JaxObjects`), converted to and from its record, both ways here.

:class:`JaxObjects` carries ``jax.export.Exported``'s fields under its names:
tree definitions, ``ShapedArray``\\ s (symbolic dimensions as ``JaxDim``
expressions sharing one scope with the record's constraints), shardings,
effect objects, and the module bytes and numbers that go with them. It is
made once per export: by the lowering (the very objects of its lowering, the
module serialized there, as ``jax.export`` does), from a serialized module and
its specs (:meth:`~jaxport.adapters.jax.exported.exported.Exported.from_module`),
or from a record read from an artifact (:func:`jax_objects_of`).

The other way, :attr:`JaxObjects.record` is the record of an export made in
this process, made when first read, as ``jax.export`` converts its objects
when it serializes: what the artifact format cannot hold (a pytree node type
not registered for serialization, a dict key that is not a string, an effect
that its class cannot rebuild, a dtype without a wire code) fails there, not
at export or call, and a node type registered in between is then found.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import jax
from jax.core import ShapedArray
from jax.sharding import NamedSharding

from jaxport.adapters.jax import internals as jax_internals
from jaxport.adapters.jax.records import (
    aval_records, constraints_of, effect_record, jax_aval, jax_effect, jax_sharding, parse_shapes,
    sharding_record
)
from jaxport.adapters.jax.trees.registry import PytreeSerializationRegistry, default_registry
from jaxport.adapters.jax.versions import written_format
from jaxport.adapters.mlir.bindings import newest_readable_version
from jaxport.domain.artifact import calling_convention
from jaxport.domain.artifact.module_format import check_portable_artifact
from jaxport.domain.artifact.record import ArtifactRecord
from jaxport.domain.artifact.safety import DisabledSafetyCheck
from jaxport.domain.errors import ArtifactError, CallingConventionError


@dataclass(frozen=True, eq=False)  # no slots: ``record`` is cached in the instance
class JaxObjects:
    """One export in JAX's terms: ``jax.export.Exported``'s fields.

    Attributes:
        fun_name: the exported function's name, for messages.
        in_tree: the pytree of ``(args, kwargs)``.
        in_avals: the flat input abstract values.
        out_tree: the pytree of the results.
        out_avals: the flat output abstract values.
        in_shardings: one ``NamedSharding`` over an abstract mesh per flat
            input, None where unspecified (a legacy ``HloShardingRecord`` for
            artifacts written before named shardings were recorded).
        out_shardings: the same per flat output.
        nr_devices: the number of devices the module was lowered for.
        platforms: the lowering platforms.
        ordered_effects: the effects ``main`` threads tokens for.
        unordered_effects: the other effects.
        disabled_safety_checks: the checks disabled at export.
        mlir_module_serialized: the StableHLO portable artifact.
        calling_convention_version: the version of ``main``'s calling convention.
        module_kept_var_idx: the sorted indices of the flat inputs ``main`` takes.
        uses_global_constants: whether ``main`` needs shape refinement.
    """

    fun_name: str
    in_tree: jax.tree_util.PyTreeDef
    in_avals: tuple[ShapedArray, ...]
    out_tree: jax.tree_util.PyTreeDef
    out_avals: tuple[ShapedArray, ...]
    in_shardings: tuple[Any, ...]
    out_shardings: tuple[Any, ...]
    nr_devices: int
    platforms: tuple[str, ...]
    ordered_effects: tuple[Any, ...]
    unordered_effects: tuple[Any, ...]
    disabled_safety_checks: tuple[DisabledSafetyCheck, ...]
    mlir_module_serialized: bytes
    calling_convention_version: int
    module_kept_var_idx: tuple[int, ...]
    uses_global_constants: bool

    @functools.cached_property
    def record(self) -> ArtifactRecord:
        """The record of these objects, for an export made in this process (made on first read).

        The trees are converted with the default pytree registry of the
        moment. A failure is not kept: a later read converts again.

        Raises:
            ValueError: a pytree node type not registered for serialization,
                or a dtype the format cannot hold.
            NonStringKeyError: a dict key that is not a string.
            EffectSerializationError: an effect that its class cannot rebuild.
        """
        registry = default_registry()
        serialization_version, jax_version = written_format()
        avals = aval_records(self.in_avals + self.out_avals)
        return ArtifactRecord(
            function_name=self.fun_name,
            in_tree=registry.args_spec(self.in_tree),
            in_avals=avals[:len(self.in_avals)],
            out_tree=registry.to_spec(self.out_tree, where="result"),
            out_avals=avals[len(self.in_avals):],
            in_shardings=tuple(sharding_record(s) for s in self.in_shardings),
            out_shardings=tuple(sharding_record(s) for s in self.out_shardings),
            nr_devices=self.nr_devices,
            platforms=self.platforms,
            ordered_effects=tuple(effect_record(e) for e in self.ordered_effects),
            unordered_effects=tuple(effect_record(e) for e in self.unordered_effects),
            disabled_checks=self.disabled_safety_checks,
            mlir_module_serialized=self.mlir_module_serialized,
            calling_convention_version=self.calling_convention_version,
            module_kept_var_idx=self.module_kept_var_idx,
            uses_global_constants=self.uses_global_constants,
            constraints=constraints_of(self.in_avals),
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
    check_portable_artifact(record.mlir_module_serialized, newest_readable=newest_readable_version())
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
        calling_convention_version=record.calling_convention_version,
        module_kept_var_idx=record.module_kept_var_idx,
        uses_global_constants=record.uses_global_constants,
    )


def _named(sharding: Any) -> NamedSharding | None:
    return sharding if isinstance(sharding, NamedSharding) else None
