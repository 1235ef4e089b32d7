"""Reading an artifact's bytes into an :class:`ArtifactRecord`.

Follows the choices of jax 0.10.2's reader, so that both read the same
artifacts the same way:

* shardings come from ``*_shardings_idxs`` into ``unique_named_shardings``
  when that vector is not empty (index 0 is unspecified), otherwise from the
  legacy ``*_shardings`` vector, where a named sharding wins over an HLO
  sharding proto; a named sharding's mesh is an index into
  ``unique_abstract_meshes`` when there are any, else its own table;
* with named (or no) shardings, avals come from ``*_avals_idxs`` into
  ``unique_avals`` when not empty, otherwise from the legacy vectors; with
  HLO shardings (artifacts before 2026-01-15) always from the legacy vectors;
* ``nr_devices`` falls back to ``nr_devices_short`` when 0; a missing memory
  space reads as device, a missing weak type (before 2026-10-30) as strong; a missing ``AbstractDevice.platform`` (before
  2026-05-15) is inferred from the device kind.

Everything is validated before use (see :mod:`jaxport.adapters.flatbuffers.reader`); trees
and VJP tables may nest only so deep. Every problem is an
:class:`ArtifactError` naming the table and field.
"""

from __future__ import annotations

from typing import Final, TypeVar

from jaxport.domain.artifact.record import ArtifactRecord, AvalRecord, EffectRecord, MemorySpace, TreeKind, TreeSpec
from jaxport.domain.artifact.sharding import (
    AbstractDeviceRecord, AbstractMeshRecord, HloShardingRecord, NamedShardingRecord, PartitionSpecRecord, ShardingRecord
)
from jaxport.domain.errors import ArtifactError
from jaxport.domain.artifact.integrity import is_sealed, unseal
from jaxport.domain.artifact.module_format import PORTABLE_ARTIFACT_MAGIC
from jaxport.domain.artifact.producer import Producer
from jaxport.domain.deferred import Deferred
from jaxport.domain.artifact.safety import DisabledSafetyCheck, SafetyCheckKind
from . import wire as W
from .reader import TableView, WireReader

_V = TypeVar("_V")

#: How deeply pytree nodes may nest.
MAX_TREE_DEPTH: Final = 200
#: How deeply VJP tables may nest (an order-N VJP nests N deep).
MAX_VJP_DEPTH: Final = 32
#: The most dimensions an array may have, and the longest text of one dimension.
MAX_RANK: Final = 1024
MAX_DIM_CHARS: Final = 4096

_TREE_KINDS: Final = W.inverse(W.TREE_KIND_CODES)
_DTYPES: Final = W.inverse(W.DTYPE_CODES)
#: Artifacts from before 2025-11-23 write no memory space: it reads as device.
_MEMORY_SPACES: Final = {W.MEMORY_SPACE_MISSING: MemorySpace.DEVICE, **W.inverse(W.MEMORY_SPACE_CODES)}
_CHECK_KINDS: Final = W.inverse(W.SAFETY_CHECK_CODES)
_AXIS_TYPES: Final = W.inverse(W.AXIS_TYPE_CODES)
#: The node of each kind that has no children, names nor custom data (records
#: are immutable: every such node of an artifact is this one).
_EMPTY_NODES: Final = {kind: TreeSpec(kind) for kind in (
    TreeKind.LEAF, TreeKind.NONE, TreeKind.TUPLE, TreeKind.LIST, TreeKind.DICT)}
#: Slots per table, by the names the decoder gives tables.
_SLOT_COUNTS: Final = {
    "Exported": W.Root.NUM_SLOTS, "PyTreeDef": W.Tree.NUM_SLOTS,
    "AbstractValue": W.Aval.NUM_SLOTS, "AbstractDevice": W.AbstractDevice.NUM_SLOTS,
    "AbstractMesh": W.AbstractMesh.NUM_SLOTS, "NamedSharding": W.NamedSharding.NUM_SLOTS,
    "PartitionSpec": W.PartitionSpec.NUM_SLOTS,
    "PartitionSpecOneAxis": W.PartitionSpecOneAxis.NUM_SLOTS,
    "Sharding": W.Sharding.NUM_SLOTS, "Effect": W.Effect.NUM_SLOTS,
    "DisabledSafetyCheck": W.DisabledCheck.NUM_SLOTS,
}


def decode_artifact(blob: bytes | bytearray | memoryview) -> ArtifactRecord:
    """Reads an artifact written by ``jax.export`` (jax 0.12.1 or older) or jaxport.

    Args:
        blob: the artifact's bytes.

    Returns:
        The record of every field, including the VJP chain. Its tables are decoded when first
        read (where a bad one raises its ArtifactError) from ``bytes`` and from sealed
        artifacts (whose checked bytes are a copy); from a mutable buffer, at once.

    Raises:
        ArtifactError: the bytes are not a valid artifact; the message says what
            is wrong and at which offset.
    """
    if not is_sealed(blob):
        if isinstance(blob, bytes):
            # Nothing to verify, and bytes cannot change: the VJP tables are decoded when first
            # read, as jax.export decodes them (a bad one raises its ArtifactError there).
            return _decode(blob)
        # A buffer the caller may change or resize later is read whole now, in place: copying
        # it so that the VJP could wait costs more than decoding the VJP (a page fault per 4 KiB
        # of the copy: 0.75 against 0.63 ms for the benchmarks' 600 KB artifact).
        with _byte_view(blob) as view:
            return _decode(view, lazy_vjp=False)
    unsealed = unseal(blob)
    extension = unsealed.extension
    # As for bare bytes, the VJP tables are decoded when first read: a table that is bad all the
    # same (an artifact made so, then sealed) raises its ArtifactError then, where the VJP is used.
    if extension is None:
        return _decode(unsealed.flatbuffer)
    return _decode(unsealed.flatbuffer, extension.constraints, extension.producer)


def records_short_device_count(blob: bytes | bytearray | memoryview) -> bool:
    """Whether an artifact also records its device count in the 16-bit ``nr_devices_short``.

    ``jax.export`` readers before format generation 5 (jax 0.8.2) read only
    that field; jax 0.9.1 and later, and jaxport, write only the 32-bit one.

    Raises:
        ArtifactError: the bytes are not a valid artifact.
    """
    flatbuffer = unseal(blob).flatbuffer if is_sealed(blob) else bytes(blob)
    table = WireReader(flatbuffer, _SLOT_COUNTS).root("Exported")
    return table.scalar(W.Root.NR_DEVICES_SHORT, "i16", "nr_devices_short", 0) > 0


def records_short_device_count_only(blob: bytes | bytearray | memoryview) -> bool:
    """Whether an artifact records its device count in the 16-bit ``nr_devices_short`` alone (jax
    0.8.1 and older), which JAX 0.11.1 and later refuse.

    Raises:
        ArtifactError: the bytes are not a valid artifact.
    """
    flatbuffer = unseal(blob).flatbuffer if is_sealed(blob) else bytes(blob)
    table = WireReader(flatbuffer, _SLOT_COUNTS).root("Exported")
    return (table.scalar(W.Root.NR_DEVICES, "u32", "nr_devices", 0) == 0
            and table.scalar(W.Root.NR_DEVICES_SHORT, "i16", "nr_devices_short", 0) > 0)


def _decode(flatbuffer: bytes | memoryview, levels: tuple[tuple[str, ...], ...] | None = None,
            producer: Producer | None = None, lazy_vjp: bool = True) -> ArtifactRecord:
    """The record of a flatbuffer; ``levels`` and ``producer`` are a trailer's (see :func:`_exported`),
    checked against the number of tables."""
    reader = WireReader(flatbuffer, _SLOT_COUNTS)
    reader.check_footer()
    root = reader.root("Exported")
    tables = _vjp_order(root) + 1
    if tables - 1 > MAX_VJP_DEPTH:
        raise root.fail("vjp", f"VJP tables nest deeper than {MAX_VJP_DEPTH}")
    if levels is not None and len(levels) != tables:
        raise ArtifactError(f"jaxport trailer: constraints for {len(levels)} tables, but the "
                            f"artifact has {tables} (a VJP chain of order {tables - 1})")
    record = _exported(root, 0, levels or (), producer, lazy_vjp)
    reader.check_end()
    return record


def _byte_view(blob: bytearray | memoryview) -> memoryview:
    """``blob`` as a flat view of bytes (a copy only when its memory is not contiguous)."""
    view = memoryview(blob)
    if not view.c_contiguous:
        return memoryview(bytes(view))
    return view if view.format == "B" and view.ndim == 1 else view.cast("B")


def _vjp_order(t: TableView) -> int:
    """The order of the VJP chain under the ``Exported`` table ``t`` (its tables are not decoded)."""
    order = 0
    while order <= MAX_VJP_DEPTH and (vjp := t.table(W.Root.VJP, "Exported", "vjp")) is not None:
        t, order = vjp, order + 1
    return order


def _exported(t: TableView, depth: int, levels: tuple[tuple[str, ...], ...] = (),
              producer: Producer | None = None, lazy_vjp: bool = True) -> ArtifactRecord:
    """The record of the ``Exported`` table ``t`` (its VJP chain's too), the table of VJP order
    ``depth``; ``levels[k]`` is the symbolic constraints of the table of order k, and ``producer``
    the root table's (a trailer's, which jax.export's format does not hold). With ``lazy_vjp``
    the VJP table is decoded when the record's ``vjp`` is first read."""
    E = W.Root
    version = t.scalar(E.SERIALIZATION_VERSION, "u16", "serialization_version", 0)
    name = t.required_string(E.FUNCTION_NAME, "function_name")
    in_avals, out_avals, in_shardings, out_shardings = _signature(t)
    in_tree = _required_tree(t, E.IN_TREE, "in_tree", len(in_avals))
    out_tree = _required_tree(t, E.OUT_TREE, "out_tree", len(out_avals))
    nr_devices = (t.scalar(E.NR_DEVICES, "u32", "nr_devices", 0)
                  or t.scalar(E.NR_DEVICES_SHORT, "i16", "nr_devices_short", 0))
    platforms = t.strings(E.PLATFORMS, "platforms")
    ordered_effects = _effects(t, E.ORDERED_EFFECTS, "ordered_effects")
    unordered_effects = _effects(t, E.UNORDERED_EFFECTS, "unordered_effects")
    disabled_checks = tuple(_disabled_check(c) for c in t.tables(
        E.DISABLED_CHECKS, "DisabledSafetyCheck", "disabled_checks"))
    module = _module(t)
    calling_convention_version = t.scalar(
        E.CALLING_CONVENTION_VERSION, "u16", "calling_convention_version", 0)
    kept_var_idx = t.uints(E.MODULE_KEPT_VAR_IDX, "u16", "module_kept_var_idx")
    uses_global_constants = bool(t.scalar(
        E.USES_GLOBAL_CONSTANTS, "u8", "uses_global_constants", 0))
    vjp_table = t.table(E.VJP, "Exported", "vjp")  # nested no deeper than allowed: _decode checked
    vjp: ArtifactRecord | Deferred[ArtifactRecord | None] | None = None
    if vjp_table is not None and lazy_vjp:
        vjp = Deferred(lambda: _exported(vjp_table, depth + 1, levels))
    elif vjp_table is not None:
        vjp = _exported(vjp_table, depth + 1, levels, lazy_vjp=False)
    jax_version = t.string(E.JAX_VERSION, "jax_version")
    try:
        return ArtifactRecord(
            function_name=name, in_tree=in_tree, in_avals=in_avals, out_tree=out_tree,
            out_avals=out_avals, in_shardings=in_shardings, out_shardings=out_shardings,
            nr_devices=nr_devices, platforms=platforms, ordered_effects=ordered_effects,
            unordered_effects=unordered_effects, disabled_checks=disabled_checks,
            mlir_module_serialized=module,
            calling_convention_version=calling_convention_version,
            module_kept_var_idx=kept_var_idx, uses_global_constants=uses_global_constants,
            vjp=vjp, serialization_version=version, jax_version=jax_version,
            constraints=levels[depth] if depth < len(levels) else (), producer=producer)
    except ValueError as exc:  # the record's own invariants (shardings per aval, kept_var_idx, devices...)
        raise ArtifactError(f"table Exported at offset {t.pos}: {exc}") from None


_Shardings = tuple[ShardingRecord | None, ...]
_Signature = tuple[tuple[AvalRecord, ...], tuple[AvalRecord, ...], _Shardings, _Shardings]


def _signature(t: TableView) -> _Signature:
    """(in_avals, out_avals, in_shardings, out_shardings), chosen as jax 0.10.2 does (the record
    checks that they agree)."""
    E = W.Root
    unique_avals = _unique_avals(t)
    in_shardings, out_shardings = _in_out_shardings(t)
    use_idxs = not any(isinstance(s, HloShardingRecord) for s in in_shardings + out_shardings)
    in_avals = _avals(t, "in", E.IN_AVALS_IDXS, E.IN_AVALS, unique_avals, use_idxs)
    out_avals = _avals(t, "out", E.OUT_AVALS_IDXS, E.OUT_AVALS, unique_avals, use_idxs)
    return in_avals, out_avals, in_shardings, out_shardings


def _in_out_shardings(t: TableView) -> tuple[_Shardings, _Shardings]:
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
                meshes: tuple[AbstractMeshRecord, ...]) -> _Shardings:
    field = f"{side}_shardings_idxs"
    idxs = t.uints(idxs_slot, "u32", field)
    if idxs:  # index 0 is unspecified, k + 1 the unique named sharding k
        return _pick(t, field, idxs, (None, *named), "unique_named_shardings and unspecified")
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
        mesh = _mesh(t.required_table(S.MESH, "AbstractMesh", "mesh"))
    spec = t.required_table(S.SPEC, "PartitionSpec", "spec")
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


def _module(t: TableView) -> bytes:
    field = "mlir_module_serialized"
    module = t.present(t.bytes_field(W.Root.MLIR_MODULE, field), field)
    if not module.startswith(PORTABLE_ARTIFACT_MAGIC):
        raise t.fail(field, (
            f"the module is not a StableHLO portable artifact: it starts with "
            f"{module[:4]!r} instead of {PORTABLE_ARTIFACT_MAGIC!r}"))
    return module


def _required_tree(t: TableView, slot: int, field: str, nr_leaves: int) -> TreeSpec:
    tree = _tree(t.required_table(slot, "PyTreeDef", field), 0)
    if tree.num_leaves != nr_leaves:
        raise t.fail(field, f"the tree has {tree.num_leaves} leaves for {nr_leaves} avals")
    return tree


def _tree(t: TableView, depth: int) -> TreeSpec:
    S = W.Tree
    kind = _enum(t, S.KIND, "kind", _TREE_KINDS, "pytree node kind")
    if kind in _EMPTY_NODES and not t.has_fields_after(S.KIND):
        return _EMPTY_NODES[kind]
    children_tables = t.tables(S.CHILDREN, "PyTreeDef", "children")
    if children_tables and depth >= MAX_TREE_DEPTH:
        raise t.fail("children", f"pytree nodes nest deeper than {MAX_TREE_DEPTH}")
    children = tuple([_tree(c, depth + 1) for c in children_tables])
    names = t.strings(S.CHILDREN_NAMES, "children_names") if kind is TreeKind.DICT else ()
    custom = kind is TreeKind.CUSTOM
    custom_name = t.required_string(S.CUSTOM_NAME, "custom_name") if custom else None
    auxdata = (t.bytes_field(S.CUSTOM_AUXDATA, "custom_auxdata") or b"") if custom else b""
    try:
        return TreeSpec(kind, children, names, custom_name, auxdata)
    except ValueError as exc:
        raise t.fail("kind", str(exc)) from None


def _unique_avals(t: TableView) -> tuple[AvalRecord, ...]:
    """The unique avals; wire-equal entries get successive variants."""
    seen: dict[AvalRecord, int] = {}
    out = []
    for table in t.tables(W.Root.UNIQUE_AVALS, "AbstractValue", "unique_avals"):
        aval = _aval(table)
        variant = seen.get(aval, 0)
        seen[aval] = variant + 1
        out.append(aval if variant == 0 else AvalRecord(
            aval.shape, aval.dtype, aval.memory_space, aval.weak_type, variant))
    return tuple(out)


def _avals(t: TableView, side: str, idxs_slot: int, legacy_slot: int,
           unique: tuple[AvalRecord, ...], use_idxs: bool) -> tuple[AvalRecord, ...]:
    field = f"{side}_avals_idxs"
    idxs = t.uints(idxs_slot, "u32", field) if use_idxs else ()
    if idxs:
        return _pick(t, field, idxs, unique, "unique_avals")
    return tuple(_aval(a) for a in t.tables(legacy_slot, "AbstractValue", f"{side}_avals"))


def _aval(t: TableView) -> AvalRecord:
    S = W.Aval
    kind = t.scalar(S.KIND, "i8", "kind", 0)
    if kind != W.AVAL_KIND_SHAPED_ARRAY:
        raise t.fail("kind", f"unsupported abstract value kind {kind}")
    dtype = _enum(t, S.DTYPE, "dtype", _DTYPES, "dtype code")
    space = _enum(t, S.MEMORY_SPACE, "memory_space", _MEMORY_SPACES, "memory space code",
                  W.MEMORY_SPACE_MISSING)
    shape = t.strings(S.SHAPE, "shape")
    if len(shape) > MAX_RANK:
        raise t.fail("shape", f"{len(shape)} dimensions, more than the limit of {MAX_RANK}")
    for i, dim in enumerate(shape):
        if not dim or len(dim) > MAX_DIM_CHARS:
            raise t.fail(f"shape[{i}]", f"a dimension of {len(dim)} characters (allowed: 1 "
                                        f"to {MAX_DIM_CHARS})")
    return AvalRecord(shape, dtype, space, bool(t.scalar(S.WEAK_TYPE, "u8", "weak_type", 0)))


def _effects(t: TableView, slot: int, field: str) -> tuple[EffectRecord, ...]:
    return tuple(EffectRecord(e.required_string(W.Effect.TYPE_NAME, "type_name"))
                 for e in t.tables(slot, "Effect", field))


def _disabled_check(t: TableView) -> DisabledSafetyCheck:
    S = W.DisabledCheck
    kind = _enum(t, S.KIND, "kind", _CHECK_KINDS, "disabled safety check kind")
    if kind is SafetyCheckKind.CUSTOM_CALL:
        target = t.required_string(S.CUSTOM_CALL_TARGET, "custom_call_target")
        if not target:
            raise t.fail("custom_call_target", "the custom-call target is empty")
        return DisabledSafetyCheck.custom_call(target)
    return DisabledSafetyCheck(kind)


def _enum(t: TableView, slot: int, field: str, values: dict[int, _V], what: str, default: int = 0) -> _V:
    """The value of the ``int8`` code in ``field`` (``default`` when absent), by the table ``values``."""
    code = t.scalar(slot, "i8", field, default)
    value = values.get(code)
    if value is None:
        raise t.fail(field, f"unknown {what} {code}")
    return value


def _pick(t: TableView, field: str, idxs: tuple[int, ...], items: tuple[_V, ...], what: str) -> tuple[_V, ...]:
    """``items[i]`` for each index ``i`` in the vector ``field`` (``what`` names the items)."""
    for i, idx in enumerate(idxs):
        if idx >= len(items):
            raise t.fail(f"{field}[{i}]", f"index {idx} is out of range for {len(items)} {what}")
    return tuple(items[i] for i in idxs)
