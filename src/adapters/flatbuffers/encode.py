"""Writing an :class:`ArtifactRecord` as the bytes jax 0.10.2's ``Exported.serialize()`` writes.

Byte identity with ``jax.export`` follows from doing what its writer
(``jax/_src/export/serialization.py``) does with a ``flatbuffers.Builder``, in
the same order, with a builder that lays bytes out as that one does (:mod:`.builder`): every sub-object is built bottom-up before the table that
refers to it, vectors of tables are built element by element and then
prepended in reverse, fields are added in the order below (``nr_devices``
right after ``out_avals``), scalars equal to their default are left out, and
the builder shares equal vtables. The root table carries
``serialization_version`` 3 (or, with a JAX version, 12 or 13), the legacy
per-input vectors that older readers need, and the de-duplicated ``unique_*``
tables with their index vectors. Generation 13 writes ``weak_type`` where it
is true; older generations write every aval strong, but keep a weak and a
strong aval apart in the table of unique avals, as their JAX did.
Each VJP table is written, with its own unique tables, between
``module_kept_var_idx`` and the unique tables of the table that holds it.

A record with legacy HLO shardings (read from an artifact before 2026-01-15)
is written with ``Sharding.hlo_sharding_proto`` in the legacy vectors and
empty sharding index vectors, which jax 0.10.2 reads back the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Protocol, TypeVar

from jaxport.domain.artifact.record import (
    JAX_VERSION_GENERATION, WEAK_TYPE_GENERATION, WRITTEN_SERIALIZATION_VERSION, ArtifactRecord, AvalRecord,
    EffectRecord, TreeKind, TreeSpec
)
from jaxport.domain.artifact.sharding import (
    AbstractDeviceRecord, AbstractMeshRecord, HloShardingRecord, NamedShardingRecord, PartitionSpecRecord, ShardingRecord
)
from jaxport.domain.artifact.safety import DisabledSafetyCheck
from . import wire as W
from .builder import Builder

_T = TypeVar("_T")


class ArtifactBuilder(Protocol):
    """The operations of ``flatbuffers.Builder`` that the encoder uses (:class:`.builder.Builder` has them)."""

    def StartObject(self, numfields: int) -> None: ...
    def EndObject(self) -> int: ...
    def CreateString(self, s: str) -> int: ...
    def CreateByteVector(self, x: bytes) -> int: ...
    def PrependUOffsetTRelativeSlot(self, o: int, x: int, d: int) -> None: ...
    def PrependInt8Slot(self, o: int, x: int, d: int) -> None: ...
    def PrependUint16Slot(self, o: int, x: int, d: int) -> None: ...
    def PrependUint32Slot(self, o: int, x: int, d: int | None) -> None: ...
    def PrependBoolSlot(self, o: int, x: int, d: int) -> None: ...
    def Finish(self, rootTable: int) -> int: ...
    def Output(self) -> bytearray: ...
    def CreateOffsetVector(self, offsets: Sequence[int]) -> int: ...
    def CreateUintVector(self, values: Sequence[int], width: int) -> int: ...


def encode_artifact(record: ArtifactRecord) -> bytearray:
    """Writes ``record`` in the format of ``jax.export``'s ``Exported.serialize()``.

    Args:
        record: the artifact; without a ``jax_version`` it is written as jax
            0.10.2 writes (``serialization_version`` 3), with one as jax 0.11.2
            and later write (the version number, 12 or more, and the JAX
            version; from 13 the avals' weak types). Its VJP chain is written in full.

    Returns:
        The artifact's bytes (for a record read from jax 0.10.2's bytes, the
        same bytes).

    Raises:
        TypeError: a number does not fit its field (``flatbuffers.Builder`` raises it).
    """
    # Room for the tables, so that the buffer rarely grows (the builder keeps the modules apart).
    size = 1024 + 1024 * len(record.chain)
    builder: ArtifactBuilder = Builder(size)
    builder.Finish(_exported(builder, record))
    return builder.Output()


@dataclass(slots=True)
class _Uniques:
    """The de-duplicated tables of one Exported, each in order of first use."""

    avals: dict[AvalRecord, int] = field(default_factory=dict)
    meshes: dict[AbstractMeshRecord, int] = field(default_factory=dict)
    named: dict[NamedShardingRecord, int] = field(default_factory=dict)

    @staticmethod
    def of(record: ArtifactRecord) -> _Uniques:
        uniques = _Uniques()
        for aval in record.in_avals + record.out_avals:
            uniques.avals.setdefault(aval, len(uniques.avals))
        for sharding in record.in_shardings + record.out_shardings:
            if isinstance(sharding, NamedShardingRecord):
                uniques.meshes.setdefault(sharding.mesh, len(uniques.meshes))
                uniques.named.setdefault(sharding, len(uniques.named))
        return uniques


#: The order in which the root's fields are added: by slot, but ``nr_devices`` right after ``out_avals``
#: (where ``nr_devices_short``, never written, has its slot), as jax.export's writer adds them.
_ROOT_ORDER: Final = (*range(W.Root.OUT_AVALS + 1), W.Root.NR_DEVICES,
                      *range(W.Root.IN_SHARDINGS, W.Root.NR_DEVICES), *range(W.Root.NR_DEVICES + 1, W.Root.NUM_SLOTS))


def _exported(b: ArtifactBuilder, rec: ArtifactRecord) -> int:
    """The Exported table of ``rec``."""
    E = W.Root
    uniques = _Uniques.of(rec)
    generation_12 = rec.jax_version is not None
    version = max(rec.serialization_version, JAX_VERSION_GENERATION) if generation_12 else WRITTEN_SERIALIZATION_VERSION
    _aval = _aval_with_weak_types if version >= WEAK_TYPE_GENERATION else _strong_aval
    # Each sub-object in the order jax.export's writer makes them, by the slot that refers to it.
    offsets = {
        E.FUNCTION_NAME: b.CreateString(rec.function_name),
        E.IN_TREE: _tree(b, rec.in_tree),
        E.IN_AVALS: _tables(b, _aval, rec.in_avals),
        E.OUT_TREE: _tree(b, rec.out_tree),
        E.OUT_AVALS: _tables(b, _aval, rec.out_avals),
        E.IN_SHARDINGS: _tables(b, lambda b, s: _sharding(b, s, uniques), rec.in_shardings),
        E.OUT_SHARDINGS: _tables(b, lambda b, s: _sharding(b, s, uniques), rec.out_shardings),
        E.ORDERED_EFFECTS: _tables(b, _effect, rec.ordered_effects),
        E.UNORDERED_EFFECTS: _tables(b, _effect, rec.unordered_effects),
        E.DISABLED_CHECKS: _tables(b, _disabled_check, rec.disabled_checks),
        E.PLATFORMS: _strings(b, rec.platforms),
        E.MLIR_MODULE: b.CreateByteVector(rec.mlir_module_serialized),
        E.MODULE_KEPT_VAR_IDX: _uints(b, rec.module_kept_var_idx, 2),
        E.VJP: _exported(b, rec.vjp) if rec.vjp is not None else 0,
        E.UNIQUE_AVALS: _tables(b, _aval, uniques.avals),
        E.UNIQUE_ABSTRACT_MESHES: _tables(b, _mesh, uniques.meshes),
        E.UNIQUE_NAMED_SHARDINGS: _tables(b, lambda b, s: _named_sharding(b, s, uniques), uniques.named),
        E.IN_AVALS_IDXS: _uints(b, [uniques.avals[a] for a in rec.in_avals], 4),
        E.OUT_AVALS_IDXS: _uints(b, [uniques.avals[a] for a in rec.out_avals], 4),
        E.IN_SHARDINGS_IDXS: _uints(b, _sharding_idxs(rec.in_shardings, uniques), 4),
        E.OUT_SHARDINGS_IDXS: _uints(b, _sharding_idxs(rec.out_shardings, uniques), 4),
        # Generation 12 (jax 0.11.2 and later) writes its version number and the JAX version last.
        E.JAX_VERSION: b.CreateString(rec.jax_version) if rec.jax_version is not None else 0,
    }
    scalars: dict[int, tuple[Callable[[int, int, int], None], int]] = {
        E.SERIALIZATION_VERSION: (b.PrependUint16Slot, version),
        E.NR_DEVICES: (b.PrependUint32Slot, rec.nr_devices),
        E.CALLING_CONVENTION_VERSION: (b.PrependUint16Slot, rec.calling_convention_version),
        E.USES_GLOBAL_CONSTANTS: (b.PrependBoolSlot, rec.uses_global_constants),
    }
    b.StartObject(E.NUM_SLOTS if generation_12 else E.NUM_SLOTS_11)
    prepend_offset = b.PrependUOffsetTRelativeSlot
    for slot in _ROOT_ORDER:  # each field left out when it has its default (0, False, no object)
        scalar = scalars.get(slot)
        if scalar is not None:
            scalar[0](slot, scalar[1], 0)
        elif offset := offsets.get(slot, 0):
            prepend_offset(slot, offset, 0)
    return b.EndObject()


def _sharding_idxs(shardings: Sequence[ShardingRecord | None], uniques: _Uniques) -> list[int]:
    if any(isinstance(s, HloShardingRecord) for s in shardings):
        return []  # readers then take the legacy vector, which holds the protos
    # 0 for unspecified, 1 + the unique index of a named sharding.
    return [1 + uniques.named[s] if isinstance(s, NamedShardingRecord) else 0 for s in shardings]


def _tables(b: ArtifactBuilder, write_one: Callable[[ArtifactBuilder, _T], int],
            items: Iterable[_T]) -> int:
    """A vector of tables: the tables first, then their offsets."""
    return _offsets(b, [write_one(b, item) for item in items])


def _strings(b: ArtifactBuilder, items: Sequence[str]) -> int:
    return _offsets(b, [b.CreateString(s) for s in items])


def _offsets(b: ArtifactBuilder, offsets: Sequence[int]) -> int:
    """A vector of offsets, prepended in reverse order."""
    return b.CreateOffsetVector(offsets)


def _uints(b: ArtifactBuilder, values: Sequence[int], width: int) -> int:
    """A vector of ``uint8`` (width 1), ``uint16`` (2) or ``uint32`` (4), laid out
    as jax.export's ``CreateNumpyVector`` (or its ``PrependByte`` loop) lays it out."""
    return b.CreateUintVector(values, width)


def _offset_table(b: ArtifactBuilder, num_slots: int, offsets: Mapping[int, int], kind: int = 0) -> int:
    """A table of offset fields, added in the order of ``offsets`` (by slot; 0: absent), after the ``int8``
    kind in slot 0 of a table that has one (a pytree node, a sharding, a disabled check; 0: the default)."""
    b.StartObject(num_slots)
    if kind:
        b.PrependInt8Slot(0, kind, 0)
    for slot, offset in offsets.items():
        if offset:
            b.PrependUOffsetTRelativeSlot(slot, offset, 0)
    return b.EndObject()


def _tree(b: ArtifactBuilder, tree: TreeSpec) -> int:
    S = W.Tree
    children = _tables(b, _tree, tree.children) if tree.children else 0
    names = _strings(b, tree.children_names) if tree.kind is TreeKind.DICT else 0
    custom_name = custom_auxdata = 0
    if tree.custom_name is not None:
        custom_name = b.CreateString(tree.custom_name)
        custom_auxdata = b.CreateByteVector(tree.custom_auxdata)
    return _offset_table(b, S.NUM_SLOTS, {S.CHILDREN: children, S.CHILDREN_NAMES: names, S.CUSTOM_NAME: custom_name,
                                          S.CUSTOM_AUXDATA: custom_auxdata}, kind=W.TREE_KIND_CODES[tree.kind])


def _strong_aval(b: ArtifactBuilder, aval: AvalRecord, weak_type: bool = False) -> int:
    """An aval as generations before 13 write it: no weak type."""
    S = W.Aval
    shape = _strings(b, aval.shape)
    b.StartObject(S.NUM_SLOTS)
    b.PrependInt8Slot(S.KIND, W.AVAL_KIND_SHAPED_ARRAY, 0)
    b.PrependUOffsetTRelativeSlot(S.SHAPE, shape, 0)
    b.PrependInt8Slot(S.DTYPE, W.DTYPE_CODES[aval.dtype], 0)
    b.PrependInt8Slot(S.MEMORY_SPACE, W.MEMORY_SPACE_CODES[aval.memory_space], 0)
    b.PrependBoolSlot(S.WEAK_TYPE, weak_type, 0)  # left out when False, as every default
    return b.EndObject()


def _aval_with_weak_types(b: ArtifactBuilder, aval: AvalRecord) -> int:
    """An aval as generation 13 writes it: ``weak_type`` where it is true."""
    return _strong_aval(b, aval, aval.weak_type)


def _device(b: ArtifactBuilder, device: AbstractDeviceRecord) -> int:
    S = W.AbstractDevice
    device_kind = b.CreateString(device.device_kind)
    platform = b.CreateString(device.platform)
    b.StartObject(S.NUM_SLOTS)
    b.PrependUOffsetTRelativeSlot(S.DEVICE_KIND, device_kind, 0)
    if device.num_cores is not None:
        b.PrependUint32Slot(S.NUM_CORES, device.num_cores, None)
    b.PrependUOffsetTRelativeSlot(S.PLATFORM, platform, 0)
    return b.EndObject()


def _mesh(b: ArtifactBuilder, mesh: AbstractMeshRecord) -> int:
    S = W.AbstractMesh
    sizes = _uints(b, mesh.axis_sizes, 4)
    names = _strings(b, mesh.axis_names)
    types = _uints(b, [W.AXIS_TYPE_CODES[t] for t in mesh.axis_types], 1)
    device = _device(b, mesh.abstract_device) if mesh.abstract_device is not None else 0
    return _offset_table(b, S.NUM_SLOTS, {S.AXIS_SIZES: sizes, S.AXIS_NAMES: names, S.AXIS_TYPES: types,
                                          S.ABSTRACT_DEVICE: device})


def _one_axis(b: ArtifactBuilder, axes: tuple[str, ...]) -> int:
    names = _strings(b, axes)
    return _offset_table(b, W.PartitionSpecOneAxis.NUM_SLOTS, {W.PartitionSpecOneAxis.AXES: names})


def _partition_spec(b: ArtifactBuilder, spec: PartitionSpecRecord) -> int:
    S = W.PartitionSpec
    partitions = _tables(b, _one_axis, spec.partitions)
    reduced = _strings(b, spec.reduced)
    unreduced = _strings(b, spec.unreduced)
    return _offset_table(b, S.NUM_SLOTS, {S.PARTITIONS: partitions, S.REDUCED: reduced, S.UNREDUCED: unreduced})


def _named_sharding(b: ArtifactBuilder, sharding: NamedShardingRecord, uniques: _Uniques) -> int:
    S = W.NamedSharding
    mesh = _mesh(b, sharding.mesh)  # still written in full, for readers before 2026-04-04
    spec = _partition_spec(b, sharding.spec)
    memory_kind = b.CreateString(sharding.memory_kind) if sharding.memory_kind is not None else 0
    b.StartObject(S.NUM_SLOTS)
    b.PrependUOffsetTRelativeSlot(S.MESH, mesh, 0)
    b.PrependUOffsetTRelativeSlot(S.SPEC, spec, 0)
    b.PrependUOffsetTRelativeSlot(S.MEMORY_KIND, memory_kind, 0)
    b.PrependUint32Slot(S.ABSTRACT_MESH_IDX, uniques.meshes[sharding.mesh], 0)
    return b.EndObject()


def _sharding(b: ArtifactBuilder, sharding: ShardingRecord | None, uniques: _Uniques) -> int:
    S = W.Sharding
    named = proto = 0
    if isinstance(sharding, NamedShardingRecord):
        named = _named_sharding(b, sharding, uniques)
    elif isinstance(sharding, HloShardingRecord):
        proto = b.CreateByteVector(sharding.proto)
    return _offset_table(b, S.NUM_SLOTS, {S.HLO_SHARDING_PROTO: proto, S.NAMED_SHARDING: named},
                         kind=S.KIND_HLO_SHARDING if proto else 0)


def _effect(b: ArtifactBuilder, effect: EffectRecord) -> int:
    type_name = b.CreateString(effect.type_name)
    return _offset_table(b, W.Effect.NUM_SLOTS, {W.Effect.TYPE_NAME: type_name})


def _disabled_check(b: ArtifactBuilder, check: DisabledSafetyCheck) -> int:
    S = W.DisabledCheck
    target = b.CreateString(check.target) if check.target is not None else 0  # a custom call's only
    return _offset_table(b, S.NUM_SLOTS, {S.CUSTOM_CALL_TARGET: target}, kind=W.SAFETY_CHECK_CODES[check.kind])
