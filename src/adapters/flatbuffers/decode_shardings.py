"""Reading the shardings of an artifact's bytes: named shardings over abstract meshes, or legacy HLO protos.

Follows jax 0.10.2's reader: shardings come from ``*_shardings_idxs`` into
``unique_named_shardings`` when that vector is not empty (index 0 is
unspecified), otherwise from the legacy ``*_shardings`` vector, where a named
sharding wins over an HLO sharding proto; a named sharding's mesh is an index
into ``unique_abstract_meshes`` when there are any, else its own table; a
missing ``AbstractDevice.platform`` (before 2026-05-15) is inferred from the
device kind. :mod:`.decode` reads the rest of the artifact and chooses the
avals by the kind of sharding found here. Every problem is an
:class:`~jaxport.domain.errors.ArtifactError` naming the table and field.
"""

from __future__ import annotations

from typing import Final

from jaxport.domain.artifact.sharding import (
    AbstractDeviceRecord, AbstractMeshRecord, HloShardingRecord, NamedShardingRecord, PartitionSpecRecord, ShardingRecord
)
from . import wire as W
from .reader import TableView

_AXIS_TYPES: Final = W.inverse(W.AXIS_TYPE_CODES)
_Shardings = tuple[ShardingRecord | None, ...]


def read_shardings(t: TableView) -> tuple[_Shardings, _Shardings]:
    """The in and the out shardings of the ``Exported`` table ``t``, one per flat argument and result.

    Raises:
        ArtifactError: an index out of range, an unknown code or a missing field.
    """
    E = W.Root
    meshes = tuple(_mesh(m) for m in t.tables(
        E.UNIQUE_ABSTRACT_MESHES, "AbstractMesh", "unique_abstract_meshes"))
    named = tuple(_named_sharding(s, meshes) for s in t.tables(
        E.UNIQUE_NAMED_SHARDINGS, "NamedSharding", "unique_named_shardings"))
    return (_shardings(t, "in", E.IN_SHARDINGS_IDXS, E.IN_SHARDINGS, named, meshes),
            _shardings(t, "out", E.OUT_SHARDINGS_IDXS, E.OUT_SHARDINGS, named, meshes))


def _shardings(t: TableView, side: str, idxs_slot: int, legacy_slot: int,
                named: tuple[NamedShardingRecord, ...],
                meshes: tuple[AbstractMeshRecord, ...]) -> tuple[ShardingRecord | None, ...]:
    field = f"{side}_shardings_idxs"
    idxs = t.uints(idxs_slot, "u32", field)
    if idxs:
        for i, idx in enumerate(idxs):
            if idx > len(named):
                raise t.fail(f"{field}[{i}]", f"index {idx} is out of range for "
                                              f"{len(named)} unique_named_shardings")
        return tuple(None if i == 0 else named[i - 1] for i in idxs)
    return tuple(_legacy_sharding(s, meshes) for s in t.tables(
        legacy_slot, "Sharding", f"{side}_shardings"))


def _legacy_sharding(t: TableView, meshes: tuple[AbstractMeshRecord, ...]
                     ) -> ShardingRecord | None:
    S = W.Sharding
    named = t.table(S.NAMED_SHARDING, "NamedSharding", "named_sharding")
    if named is not None:
        return _named_sharding(named, meshes)
    proto = t.bytes_field(S.HLO_SHARDING_PROTO, "hlo_sharding_proto")
    return None if proto is None else HloShardingRecord(proto)


def _named_sharding(t: TableView, meshes: tuple[AbstractMeshRecord, ...]
                     ) -> NamedShardingRecord:
    S = W.NamedSharding
    if meshes:
        idx = t.scalar(S.ABSTRACT_MESH_IDX, "u32", "abstract_mesh_idx", 0)
        if idx >= len(meshes):
            raise t.fail("abstract_mesh_idx", f"index {idx} is out of range for "
                                              f"{len(meshes)} unique_abstract_meshes")
        mesh = meshes[idx]
    else:
        mesh_table = t.table(S.MESH, "AbstractMesh", "mesh")
        if mesh_table is None:
            raise t.fail("mesh", "the field is missing")
        mesh = _mesh(mesh_table)
    spec = t.table(S.SPEC, "PartitionSpec", "spec")
    if spec is None:
        raise t.fail("spec", "the field is missing")
    return NamedShardingRecord(mesh, _partition_spec(spec),
                               t.string(S.MEMORY_KIND, "memory_kind"))


def _mesh(t: TableView) -> AbstractMeshRecord:
    S = W.AbstractMesh
    types = []
    for i, code in enumerate(t.uints(S.AXIS_TYPES, "i8", "axis_types")):
        axis_type = _AXIS_TYPES.get(code)
        if axis_type is None:
            raise t.fail(f"axis_types[{i}]", f"unknown axis type code {code}")
        types.append(axis_type)
    device = t.table(S.ABSTRACT_DEVICE, "AbstractDevice", "abstract_device")
    try:
        return AbstractMeshRecord(
            t.uints(S.AXIS_SIZES, "u32", "axis_sizes"),
            t.strings(S.AXIS_NAMES, "axis_names"),
            tuple(types),
            None if device is None else _device(device))
    except ValueError as exc:
        raise t.fail("axis_names", str(exc)) from None


def _device(t: TableView) -> AbstractDeviceRecord:
    S = W.AbstractDevice
    kind = t.required_string(S.DEVICE_KIND, "device_kind")
    platform = t.string(S.PLATFORM, "platform") or _platform_of_device_kind(t, kind)
    return AbstractDeviceRecord(kind, t.optional_scalar(S.NUM_CORES, "u32", "num_cores"),
                                platform)


def _platform_of_device_kind(t: TableView, device_kind: str) -> str:
    """The platform of an abstract device recorded before 2026-05-15."""
    lowered = device_kind.lower()
    if "cpu" in lowered:
        return "cpu"
    if "tpu" in lowered:
        return "tpu"
    if any(vendor in lowered for vendor in ("nvidia", "tesla", "amd")):
        return "gpu"
    raise t.fail("platform", f"the field is missing and the device kind {device_kind!r} "
                             "names no known platform")


def _partition_spec(t: TableView) -> PartitionSpecRecord:
    S = W.PartitionSpec
    partitions = tuple(
        one.strings(W.PartitionSpecOneAxis.AXES, "axes")
        for one in t.tables(S.PARTITIONS, "PartitionSpecOneAxis", "partitions"))
    return PartitionSpecRecord(partitions, t.strings(S.REDUCED, "reduced"),
                               t.strings(S.UNREDUCED, "unreduced"))
