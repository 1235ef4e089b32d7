"""JAX objects <-> the artifact's plain records: avals, dimensions, dtypes, shardings, effects."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
from jax.core import ShapedArray
from jax.sharding import AbstractMesh, AxisType, NamedSharding, PartitionSpec

from jaxport.domain.artifact.record import AvalRecord, DType, EffectRecord, MemorySpace
from jaxport.domain.artifact.sharding import (
    AbstractDeviceRecord, AbstractMeshRecord, AxisType as AxisTypeRecord, HloShardingRecord, NamedShardingRecord,
    PartitionSpecRecord, ShardingRecord
)
from jaxport.domain.errors import ArtifactError, EffectSerializationError
from jaxport.domain.calls.front import record_shapes
from jaxport.domain.symbolic import SymbolicScope
from jaxport.adapters.jax import internals as jax_internals, versions as jax_versions
from jaxport.adapters.jax.lowering.dims import JaxDim

_KEY_IMPLS = {DType.KEY_FRY: "threefry2x32", DType.KEY_RBG: "rbg", DType.KEY_UNSAFE_RBG: "unsafe_rbg"}
_AXIS_TYPES = {AxisType.Auto: "AUTO", AxisType.Explicit: "EXPLICIT", AxisType.Manual: "MANUAL"}


def dtype_record(dtype: Any) -> DType:
    """The record of a JAX dtype."""
    try:
        return _known_dtype_record(dtype)
    except TypeError:  # an unhashable dtype-like
        return _dtype_record(dtype)


@functools.lru_cache(maxsize=64)
def _known_dtype_record(dtype: Any) -> DType:
    # str(dtype) costs NumPy a few microseconds; serialize asks it per aval.
    return _dtype_record(dtype)


def _dtype_record(dtype: Any) -> DType:
    if dtype == jax.dtypes.float0:
        return DType.FLOAT0
    try:
        return DType(str(dtype))
    except ValueError:
        raise ValueError(f"The dtype {dtype} cannot be serialized") from None


def key_impl_name(record: DType) -> str | None:
    """The PRNG implementation of a key dtype (``"threefry2x32"``), or None for other dtypes."""
    return _KEY_IMPLS.get(record)


@functools.cache
def jax_dtype(record: DType) -> Any:
    """The JAX dtype of a record."""
    if record is DType.FLOAT0:
        return jax.dtypes.float0
    impl = _KEY_IMPLS.get(record)
    if impl is not None:
        return jax.eval_shape(lambda: jax.random.key(0, impl=impl)).dtype
    return jnp.dtype(record.value)


def aval_record(aval: ShapedArray) -> AvalRecord:
    """The record of an abstract value, its weak type included."""
    space = MemorySpace[str(aval.memory_space.name).upper()]
    return AvalRecord(tuple(str(d) for d in aval.shape), dtype_record(aval.dtype), space, bool(aval.weak_type))


def aval_records(avals: Sequence[ShapedArray]) -> tuple[AvalRecord, ...]:
    """The records of one table's avals (inputs, then outputs), as ``jax.export``'s table of unique
    avals keeps them: avals that JAX tells apart (by an explicit sharding, or, before format
    generation 13, a weak type) but that are equal on the wire get successive variants, in the
    order of first use."""
    entries: dict[ShapedArray, AvalRecord] = {}
    twins: dict[AvalRecord, int] = {}
    records = []
    for aval in avals:
        record = entries.get(aval)
        if record is None:
            wire = aval_record(aval)
            record = entries[aval] = dataclasses.replace(wire, variant=twins.get(wire, 0))
            twins[wire] = twins.get(wire, 0) + 1
        records.append(record)
    return tuple(records)


def parse_shapes(avals: Sequence[AvalRecord], constraints: Sequence[str] = ()
                 ) -> list[tuple[Any, ...]]:
    """The dimensions of one table's avals; the symbolic ones are ``JaxDim`` expressions
    that share one fresh scope holding ``constraints`` (see
    :func:`jaxport.domain.calls.front.record_shapes`).

    Raises:
        ArtifactError: a dimension or a constraint does not parse.
    """
    return list(record_shapes(avals, constraints, expr_class=JaxDim))


def constraints_of(avals: Sequence[ShapedArray]) -> tuple[str, ...]:
    """The texts of the constraints of the scope that the avals' symbolic dimensions share."""
    for aval in avals:
        for d in aval.shape:
            scope = getattr(d, "scope", None)
            if isinstance(scope, SymbolicScope):
                return tuple(c.text for c in scope.constraints)
    return ()


def jax_aval(record: AvalRecord, shape: tuple[Any, ...], sharding: NamedSharding | None) -> ShapedArray:
    """The abstract value of a record whose dimensions were parsed to ``shape``."""
    space = getattr(jax_internals.memory_space_type(), record.memory_space.name.capitalize())
    aval = ShapedArray(shape, jax_dtype(record.dtype), weak_type=record.weak_type, memory_space=space)
    if sharding is None:  # as jax.export's reader: nothing to attach
        return aval
    result: ShapedArray = jax_internals.update_aval_with_sharding(aval, sharding)
    return result


def effect_record(effect: Any) -> EffectRecord:
    """The record of an effect: the ``str()`` of its class, as JAX records it.

    Raises:
        EffectSerializationError: the class cannot rebuild the effect when the
            artifact is read (no nullary constructor, unhashable, or a different
            effect); checked as ``jax.export`` checks it.
    """
    try:
        replica = type(effect)()
    except Exception:
        raise EffectSerializationError(str(effect), "have a nullary constructor to be serializable") from None
    try:
        same_hash = hash(effect) == hash(replica)
    except Exception:
        raise EffectSerializationError(str(effect), "be hashable to be serializable") from None
    if effect != replica or not same_hash:
        raise EffectSerializationError(
            str(effect), "have a nullary class constructor that produces an equal effect object.")
    return EffectRecord(str(type(effect)))


def jax_effect(record: EffectRecord, known: Sequence[type]) -> Any:
    """An instance of the registered effect type named by ``record``.

    Raises:
        ArtifactError: no registered effect type has that name.
    """
    for effect_type in known:
        if str(effect_type) == record.type_name:
            return effect_type()
    raise ArtifactError(f"The artifact uses the effect {record.type_name}, which is not registered "
                        "in this process; import the module that defines it before deserializing.")


def named_shardings_with_abstract_mesh(shardings: Sequence[Any], ndims: Sequence[int],
                                       mesh_from: Sequence[Any]) -> tuple[NamedSharding | None, ...]:
    """The shardings of a lowering as JAX records them: over an abstract mesh, or None.

    ``GSPMDSharding``s are read over the mesh of the first named sharding of
    ``mesh_from`` (the lowering's input then output shardings) when JAX
    partitions with Shardy, as ``jax.export`` does.
    """
    mesh = None
    if jax_internals.use_shardy_partitioner():
        named = next((s for s in mesh_from if isinstance(s, NamedSharding)), None)
        if named is not None:
            mesh = named.mesh if isinstance(named.mesh, AbstractMesh) else named.mesh.abstract_mesh
    return tuple(_with_abstract_mesh(s, n, mesh) for s, n in zip(shardings, ndims))


def _with_abstract_mesh(sharding: Any, ndim: int, mesh: Any) -> NamedSharding | None:
    if sharding is None:
        return None
    if isinstance(sharding, NamedSharding):
        concrete = sharding.mesh
        if not isinstance(concrete, AbstractMesh) and concrete.is_scalar:
            return NamedSharding(concrete.abstract_mesh, PartitionSpec(*([None] * ndim)),
                                 memory_kind=sharding.memory_kind)
        abstract = concrete if isinstance(concrete, AbstractMesh) else concrete.abstract_mesh
        return NamedSharding(abstract, sharding.spec, memory_kind=sharding.memory_kind)
    if isinstance(sharding, jax.sharding.SingleDeviceSharding):
        return NamedSharding(jax_internals.empty_abstract_mesh(), PartitionSpec(*([None] * ndim)),
                             memory_kind=sharding.memory_kind)
    if jax_internals.is_gspmd_sharding(sharding):
        result: NamedSharding = jax_internals.gspmd_as_named_sharding(sharding, ndim, mesh)
        return result
    raise NotImplementedError(f"Exporting with the sharding {sharding} is not supported yet")


def sharding_record(sharding: NamedSharding | None) -> ShardingRecord | None:
    """The record of a named sharding over an abstract mesh."""
    if sharding is None:
        return None
    mesh = sharding.mesh
    device = getattr(mesh, "abstract_device", None)
    device_record = None if device is None else AbstractDeviceRecord(
        device.device_kind, device.num_cores, device.platform)
    mesh_record = AbstractMeshRecord(
        tuple(mesh.axis_sizes), tuple(mesh.axis_names),
        tuple(AxisTypeRecord[_AXIS_TYPES[t]] for t in mesh.axis_types), device_record)
    spec = sharding.spec
    partitions = tuple(() if p is None else (p,) if isinstance(p, str) else tuple(p)
                       for p in spec._partitions)
    return NamedShardingRecord(mesh_record,
                               PartitionSpecRecord(partitions, tuple(spec.reduced), tuple(spec.unreduced)),
                               sharding.memory_kind)


def hlo_sharding(sharding: NamedSharding | HloShardingRecord | None, ndim: int) -> Any:
    """An exported value's sharding as XLA's ``HloSharding``, as ``jax.export`` here gives it.

    None stays None, and so does a named sharding on JAX 0.11.2 and later
    (:func:`jaxport.adapters.jax.versions.hlo_shardings_from_named`).

    Args:
        sharding: a named sharding, or a legacy HLO sharding record of an
            artifact written before named shardings were recorded.
        ndim: the number of dimensions of the value.
    """
    if sharding is None:
        return None
    if isinstance(sharding, HloShardingRecord):
        return jax_internals.hlo_sharding_from_proto(sharding.proto)
    if not jax_versions.hlo_shardings_from_named():
        return None
    return jax_internals.named_as_hlo_sharding(sharding, ndim)


def jax_sharding(record: ShardingRecord | None) -> Any:
    """The JAX sharding of a record (legacy HLO shardings stay as records)."""
    if not isinstance(record, NamedShardingRecord):
        return record
    mesh = record.mesh
    types = tuple(getattr(AxisType, t.value) for t in mesh.axis_types)
    device = None
    if mesh.abstract_device is not None:
        d = mesh.abstract_device
        device = jax_internals.abstract_device(d.device_kind, d.num_cores, d.platform)
    abstract = AbstractMesh(mesh.axis_sizes, mesh.axis_names, types, abstract_device=device)
    partitions: list[Any] = [None if not p else p[0] if len(p) == 1 else p
                             for p in record.spec.partitions]
    spec = PartitionSpec(*partitions, reduced=frozenset(record.spec.reduced),
                         unreduced=frozenset(record.spec.unreduced))
    return NamedSharding(abstract, spec, memory_kind=record.memory_kind)

