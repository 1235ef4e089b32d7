"""Legacy HLO shardings (``xla.OpSharding`` protocol buffers) read, and mapped onto named shardings.

Artifacts written before 2026-01-15 record each sharding as a serialized
``OpSharding`` (:class:`~.sharding.HloShardingRecord`); JAX 0.11.1 and later
refuse them. :func:`read_op_sharding` reads the fields that say how an array
is split (XLA's ``xla_data.proto``: 1 ``type``, 3 ``tile_assignment_dimensions``,
4 ``tile_assignment_devices``, 5 ``tuple_shardings``, 6
``replicate_on_last_tile_dim``, 8 ``last_tile_dims``, 9 ``iota_reshape_dims``,
10 ``iota_transpose_perm``) with the standard library, every length
bounds-checked; :func:`as_named_sharding` gives the sharding over an abstract
mesh that places the same slices on the same devices: over the module's own
Shardy mesh (:func:`module_mesh`, the axis names the exporter's mesh had) where
each axis of the tiling is a run of whole axes of that mesh, else as ``jax.export``
itself records an HLO sharding that has no mesh
(``to_named_sharding_with_abstract_mesh``): replicated over the empty mesh,
an iota-tiled one over axes ``_axis_0, _axis_1, ...`` (the proto holds no
names). What has no such form (a maximal, manual, tuple or
unreduced sharding, a device order no mesh gives, a subgroup other than
replicated) raises :class:`UnrepresentableSharding`, with why.

>>> proto = bytes.fromhex("08031a0202014a01025201" "00")  # {devices=[2,1]<=[2]}
>>> named = as_named_sharding(read_op_sharding(proto), ndim=2)
>>> named.mesh.axis_names, named.mesh.axis_sizes, named.spec.partitions
(('_axis_0',), (2,), (('_axis_0',), ()))
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, Final

from jaxport.domain.errors import ArtifactError

from .sharding import AbstractMeshRecord, AxisType, NamedShardingRecord, PartitionSpecRecord

#: Bounds on what a proto may hold (checked before use).
MAX_PROTO_BYTES: Final = 1 << 20
MAX_DIMS: Final = 64
MAX_DEVICES: Final = 1 << 20
MAX_MESHES: Final = 64


class ShardingType(IntEnum):
    """``OpSharding.Type``."""

    REPLICATED = 0
    MAXIMAL = 1
    TUPLE = 2
    OTHER = 3
    MANUAL = 4
    UNKNOWN = 5
    UNREDUCED = 6


class UnrepresentableSharding(ValueError):
    """An HLO sharding that no named sharding over an abstract mesh expresses (the message says why)."""


@dataclass(frozen=True, slots=True)
class OpSharding:
    """The fields of an ``xla.OpSharding`` that say how an array is split."""

    type: int
    tile_dims: tuple[int, ...] = ()
    devices: tuple[int, ...] = ()
    tuple_shardings: int = 0
    replicate_on_last_tile_dim: bool = False
    last_tile_dims: tuple[int, ...] = ()
    iota_reshape_dims: tuple[int, ...] = ()
    iota_transpose_perm: tuple[int, ...] = ()


def read_op_sharding(proto: bytes) -> OpSharding:
    """The :class:`OpSharding` of a serialized proto (fields it does not need are skipped).

    Raises:
        UnrepresentableSharding: the bytes are not a protocol buffer, or exceed the bounds.
    """
    if len(proto) > MAX_PROTO_BYTES:
        raise UnrepresentableSharding(f"the proto has {len(proto)} bytes, over the limit of {MAX_PROTO_BYTES}")
    ints: dict[int, list[int]] = {}
    pos, end = 0, len(proto)
    tuples = 0
    while pos < end:
        key, pos = _varint(proto, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(proto, pos)
            ints.setdefault(field, []).append(value)
        elif wire == 2:
            length, pos = _varint(proto, pos)
            if pos + length > end:
                raise UnrepresentableSharding(f"field {field} runs past the end of the proto")
            if field in (3, 4, 8, 9, 10):  # packed repeated integers
                stop = pos + length
                while pos < stop:
                    value, pos = _varint(proto, pos, stop)
                    ints.setdefault(field, []).append(value)
            else:
                tuples += field == 5
                pos += length
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        else:
            raise UnrepresentableSharding(f"field {field} has the unknown wire type {wire}")
        if pos > end or sum(map(len, ints.values())) > MAX_DEVICES + 4 * MAX_DIMS:
            raise UnrepresentableSharding("the proto is truncated or holds too many values")
    for field in (3, 9, 10):
        if len(ints.get(field, ())) > MAX_DIMS:
            raise UnrepresentableSharding(f"field {field} holds more than {MAX_DIMS} dimensions")
    return OpSharding(
        type=ints.get(1, [0])[-1], tile_dims=tuple(ints.get(3, ())), devices=tuple(ints.get(4, ())),
        tuple_shardings=tuples, replicate_on_last_tile_dim=bool(ints.get(6, [0])[-1]),
        last_tile_dims=tuple(ints.get(8, ())), iota_reshape_dims=tuple(ints.get(9, ())),
        iota_transpose_perm=tuple(ints.get(10, ())))


def _varint(data: bytes, pos: int, end: int | None = None) -> tuple[int, int]:
    stop = len(data) if end is None else end
    value = shift = 0
    while True:
        if pos >= stop or shift > 63:
            raise UnrepresentableSharding("a number of the proto is truncated or too long")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


_EMPTY_MESH: Final = AbstractMeshRecord((), (), ())


@dataclass(frozen=True, slots=True)
class ModuleMesh:
    """A Shardy mesh that a module declares (``sdy.mesh @name = <["x"=2]>``).

    Attributes:
        name: its symbol.
        axes: its axes, (name, size), major first.
        device_ids: its device order; empty for the iota order.
    """

    name: str
    axes: tuple[tuple[str, int], ...]
    device_ids: tuple[int, ...] = ()


def meshes_from_json(value: Any) -> tuple[ModuleMesh, ...]:
    """The meshes a verifying process reported (``()`` when it reported none), bounds-checked.

    Raises:
        ArtifactError: the report is malformed.
    """
    if value is None:
        return ()
    try:
        if not isinstance(value, list) or len(value) > MAX_MESHES:
            raise ValueError("not a bounded list")
        meshes = []
        for entry in value:
            axes = tuple((str(name)[:200], int(size)) for name, size in entry["axes"][:MAX_DIMS])
            ids = entry["device_ids"]
            if not isinstance(ids, list) or len(ids) > MAX_DEVICES:
                raise ValueError("device_ids is not a bounded list")
            meshes.append(ModuleMesh(str(entry["name"])[:200], axes, tuple(int(i) for i in ids)))
    except (ValueError, TypeError, KeyError) as exc:
        raise ArtifactError(f"the verifier's report of meshes is malformed: {exc}") from None
    return tuple(meshes)


def module_mesh(meshes: Sequence[ModuleMesh]) -> AbstractMeshRecord | None:
    """The abstract mesh of a module's one Shardy mesh with axes in the iota device order (what a
    JAX export declares), or None when the module declares no such mesh or several."""
    found = {m.axes for m in meshes if m.axes and not m.device_ids}
    if len(found) != 1:
        return None
    axes = found.pop()
    return AbstractMeshRecord(tuple(size for _, size in axes), tuple(name for name, _ in axes),
                              (AxisType.AUTO,) * len(axes))


def as_named_sharding(sharding: OpSharding, ndim: int, mesh: AbstractMeshRecord | None = None) -> NamedShardingRecord:
    """The named sharding over an abstract mesh that splits an array of ``ndim`` dimensions as
    ``sharding`` does: over ``mesh`` (the module's, :func:`module_mesh`) when its axes express the
    tiling, else over axes ``_axis_0, ...`` (see the module's text).

    Raises:
        UnrepresentableSharding: there is none; the message says why.
    """
    kind = sharding.type
    if sharding.tuple_shardings or kind == ShardingType.TUPLE:
        raise UnrepresentableSharding("a tuple sharding shards several values, not one array")
    if kind == ShardingType.REPLICATED:
        return NamedShardingRecord(mesh or _EMPTY_MESH, PartitionSpecRecord(((),) * ndim))
    if kind != ShardingType.OTHER:
        name = ShardingType(kind).name.lower() if kind in set(ShardingType) else f"of type {kind}"
        raise UnrepresentableSharding(f"a {name} sharding has no form as a named sharding over a mesh")
    subgroups = (ShardingType.REPLICATED,) if sharding.replicate_on_last_tile_dim else sharding.last_tile_dims
    if any(t != ShardingType.REPLICATED for t in subgroups):
        raise UnrepresentableSharding(f"its last tile dimensions hold subgroups of types {list(subgroups)}, "
                                      "and a named sharding has replicated ones only")
    tiles = sharding.tile_dims
    if len(tiles) != ndim + len(subgroups) or any(t < 1 for t in tiles):
        raise UnrepresentableSharding(f"its tile assignment {list(tiles)} does not fit an array of rank {ndim}")
    devices = math.prod(tiles)
    reshape, perm = _iota(sharding, devices)
    axes = _refined_axes(tiles, reshape, perm)
    labels = [((r, k), size) for r, parts in enumerate(axes.parts) for k, size in enumerate(parts) if size > 1]
    names = None if mesh is None else _over(mesh, labels)
    if mesh is None or names is None:
        names = {label: (f"_axis_{i}",) for i, (label, _) in enumerate(labels)}
        mesh = AbstractMeshRecord(tuple(size for _, size in labels), tuple(n[0] for n in names.values()),
                                  (AxisType.AUTO,) * len(labels))
    partitions = tuple(tuple(name for label in axes.of_dim[i] if label in names for name in names[label])
                       for i in range(ndim))
    return NamedShardingRecord(mesh, PartitionSpecRecord(partitions))


def _over(mesh: AbstractMeshRecord, labels: list[tuple[tuple[int, int], int]]
          ) -> dict[tuple[int, int], tuple[str, ...]] | None:
    """Each axis of the tiling (device-major order) as a run of whole axes of ``mesh``, or None."""
    whole = [(name, size) for name, size in zip(mesh.axis_names, mesh.axis_sizes) if size > 1]
    if math.prod(size for _, size in whole) != math.prod(size for _, size in labels):
        return None
    names: dict[tuple[int, int], tuple[str, ...]] = {}
    at = 0
    for label, size in labels:
        run: list[str] = []
        while size > 1 and at < len(whole) and size % whole[at][1] == 0:
            run.append(whole[at][0])
            size //= whole[at][1]
            at += 1
        if size != 1:
            return None
        names[label] = tuple(run)
    return names


def _iota(sharding: OpSharding, devices: int) -> tuple[list[int], list[int]]:
    """The iota reshape dimensions and transposition that give the tile assignment's device order."""
    if sharding.iota_reshape_dims:
        reshape = list(sharding.iota_reshape_dims)
        perm = list(sharding.iota_transpose_perm) or list(range(len(reshape)))
        if math.prod(reshape) != devices or sorted(perm) != list(range(len(reshape))) or 0 in reshape:
            raise UnrepresentableSharding(f"its iota tile assignment (reshape {reshape}, transpose {perm}) "
                                          f"does not give {devices} devices")
        return reshape, perm
    if list(sharding.devices) == list(range(devices)):
        return [devices], [0]
    raise UnrepresentableSharding("its devices are listed in an order that no mesh gives (not an iota)"
                                  if sharding.devices else "it lists no tile assignment")


@dataclass(slots=True)
class _Axes:
    parts: list[list[int]]  # per reshape dimension, its sizes once split, major first
    of_dim: list[list[tuple[int, int]]]  # per tile dimension, the (reshape dim, part) labels it takes


def _refined_axes(tiles: tuple[int, ...], reshape: list[int], perm: list[int]) -> _Axes:
    """The reshape dimensions split until each tile dimension takes whole ones, in transposed order."""
    parts = [[size] for size in reshape]
    while True:
        order = [(r, k) for r in perm for k in range(len(parts[r]))]
        of_dim: list[list[tuple[int, int]]] = [[] for _ in tiles]
        dim, need, split = 0, tiles[0] if tiles else 1, False
        for r, k in order:
            size = parts[r][k]
            while need == 1 and dim + 1 < len(tiles):
                dim += 1
                need = tiles[dim]
            if size == 1:
                continue
            if need % size == 0:
                of_dim[dim].append((r, k))
                need //= size
            elif size % need == 0 and need > 1:
                parts[r][k:k + 1] = [need, size // need]  # the major part goes to this dimension
                split = True
                break
            else:
                raise UnrepresentableSharding(
                    f"a device axis of size {size} straddles tile dimensions {dim} and {dim + 1} "
                    f"of {list(tiles)}: no mesh axis splits so")
        if not split:
            return _Axes(parts, of_dim)
