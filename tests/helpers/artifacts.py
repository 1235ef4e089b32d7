"""Artifacts built without JAX, for the codec tests and the fuzz campaign.

Records that use every field (:func:`rich_record`, :func:`hlo_record`), the
blobs of jax's wheel (:func:`shipped_blobs`), flatbuffers written by hand with
the raw builder (:func:`raw_exported` and its nodes), all of those by name
(:func:`crafted_blobs`), and the counted work of the wire readers that
decoding creates (:func:`recorded_readers`, :func:`linear_work`). Importing
this module imports neither JAX nor NumPy.
"""

from __future__ import annotations

import runpy
import struct
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import flatbuffers  # type: ignore[import-untyped]

from jaxport.adapters.flatbuffers import decode as flatbuffers_decode
from jaxport.adapters.flatbuffers import wire as W
from jaxport.adapters.flatbuffers.decode import MAX_TREE_DEPTH
from jaxport.adapters.flatbuffers.reader import WORK_CONSTANT, WORK_PER_BYTE, WireReader
from jaxport.domain.artifact.record import (
    ArtifactRecord, AvalRecord, DType, EffectRecord, MemorySpace, TreeKind, TreeSpec
)
from jaxport.domain.artifact.sharding import (
    AbstractDeviceRecord, AbstractMeshRecord, AxisType, HloShardingRecord, NamedShardingRecord, PartitionSpecRecord
)
from jaxport.domain.artifact.safety import DisabledSafetyCheck

#: Module bytes that pass the codec's check (a StableHLO portable artifact's header).
MODULE = b"ML\xefR\x01StableHLO_v1.15.0" + bytes(range(64))


def _site_packages_data() -> Path:
    for entry in sys.path:
        candidate = Path(entry) / "jax/_src/internal_test_util/export_back_compat_test_data"
        if candidate.is_dir():
            return candidate
    raise RuntimeError("jax's back-compat data is not installed")


def shipped_blobs() -> list[bytes]:
    """The 17 blobs of jax's wheel, read without importing jax."""
    return [bytes(entry["exported_serialized"])
            for path in sorted(_site_packages_data().glob("export_with_*.py"))
            for entry in runpy.run_path(str(path))["serializations"]]


def rich_record(vjp_depth: int = 2) -> ArtifactRecord:
    """A record that uses every field and every kind of value."""
    device = AbstractDeviceRecord("TPU v5 lite", 1, "tpu")
    mesh = AbstractMeshRecord((2, 4), ("x", "y"), (AxisType.AUTO, AxisType.EXPLICIT), device)
    mesh2 = AbstractMeshRecord((8,), ("z",), (AxisType.MANUAL,))
    rows = NamedShardingRecord(mesh, PartitionSpecRecord((("x",), ())), "device")
    both = NamedShardingRecord(mesh, PartitionSpecRecord((("x", "y"),), ("z",), ("w",)))
    other = NamedShardingRecord(mesh2, PartitionSpecRecord(((), ("z",))), "pinned_host")
    avals = (AvalRecord(("b", "4"), DType.FLOAT32),
             AvalRecord(("2*a + b",), DType.BFLOAT16, MemorySpace.HOST),
             AvalRecord((), DType.KEY_RBG, MemorySpace.ANY),
             AvalRecord(("3",), DType.FLOAT0))
    in_tree = TreeSpec.of_tuple(
        TreeSpec.of_tuple(TreeSpec.leaf(), TreeSpec.of_list(TreeSpec.leaf(), TreeSpec.none())),
        TreeSpec.of_dict({"k": TreeSpec(TreeKind.CUSTOM, (TreeSpec.leaf(), TreeSpec.leaf()), (),
                                        "collections.OrderedDict", b'["q", "p"]')}))
    return ArtifactRecord(
        function_name="fünction",
        in_tree=in_tree,
        in_avals=avals,
        out_tree=TreeSpec.of_list(TreeSpec.leaf(), TreeSpec.leaf(), TreeSpec.leaf()),
        out_avals=(avals[0], AvalRecord((), DType.FLOAT32), AvalRecord((), DType.FLOAT32, variant=1)),
        in_shardings=(rows, None, both, other),
        out_shardings=(None, rows, rows),
        nr_devices=8,
        platforms=("cpu", "cuda", "tpu"),
        ordered_effects=(EffectRecord("<class 'm.Ordered'>"),),
        unordered_effects=(EffectRecord("<class 'm.A'>"), EffectRecord("<class 'm.B'>")),
        disabled_checks=(DisabledSafetyCheck.platform(), DisabledSafetyCheck.custom_call("t"),
                         DisabledSafetyCheck.shape_assertions()),
        mlir_module_serialized=MODULE,
        calling_convention_version=10,
        module_kept_var_idx=(0, 2, 3),
        uses_global_constants=True,
        vjp=rich_record(vjp_depth - 1) if vjp_depth else None,
    )


def hlo_record() -> ArtifactRecord:
    """A record as read from an artifact of 2025 (HLO sharding protos).

    Such artifacts have no table of unique avals, hence no variants.
    """
    base = rich_record(0)
    return replace(base, out_avals=tuple(replace(a, variant=0) for a in base.out_avals),
                   in_shardings=(HloShardingRecord(b"\x08\x01"), None, None,
                                                 HloShardingRecord(b"")),
                   out_shardings=(None, HloShardingRecord(b"\x08\x03"), None))


def root_vtable(blob: bytes) -> tuple[int, int]:
    """Where the root table and its vtable start (test-side flatbuffers arithmetic)."""
    root: int = struct.unpack_from("<I", blob, 0)[0]
    return root, root - struct.unpack_from("<i", blob, root)[0]


def field_target(blob: bytes, slot: int) -> int:
    """Where an offset field of the root table points (test-side flatbuffers arithmetic)."""
    root, vtable = root_vtable(blob)
    at: int = root + struct.unpack_from("<H", blob, vtable + 4 + 2 * slot)[0]
    target: int = at + struct.unpack_from("<I", blob, at)[0]
    return target


def patched(blob: bytes, pos: int, fmt: str, value: int) -> bytes:
    """``blob`` with ``value`` packed as ``fmt`` at ``pos``."""
    out = bytearray(blob)
    struct.pack_into(fmt, out, pos, value)
    return bytes(out)


def raw_exported(b: Any, in_tree: int, out_tree: int, platforms: int = 0, future: int = 0) -> bytes:
    """A root Exported table (without avals) around ``in_tree``, with the raw builder.

    ``future``, when given, fills a slot past the schema's last one, as a
    newer ``jax.export`` would.
    """
    name = b.CreateString("f")
    module = b.CreateByteVector(MODULE)
    b.StartObject(W.Root.NUM_SLOTS + (1 if future else 0))
    b.PrependUOffsetTRelativeSlot(W.Root.FUNCTION_NAME, name, 0)
    b.PrependUOffsetTRelativeSlot(W.Root.IN_TREE, in_tree, 0)
    b.PrependUOffsetTRelativeSlot(W.Root.OUT_TREE, out_tree, 0)
    b.PrependUOffsetTRelativeSlot(W.Root.PLATFORMS, platforms, 0)
    b.PrependUOffsetTRelativeSlot(W.Root.MLIR_MODULE, module, 0)
    b.PrependUOffsetTRelativeSlot(W.Root.NUM_SLOTS, future, 0)
    b.Finish(b.EndObject())
    return bytes(b.Output())


def tuple_node(b: Any, children: list[int]) -> int:
    """A tuple pytree node of ``children``, with the raw builder."""
    b.StartVector(4, len(children), 4)
    for child in reversed(children):
        b.PrependUOffsetTRelative(child)
    vector = b.EndVector()
    b.StartObject(W.Tree.NUM_SLOTS)
    b.PrependInt8Slot(W.Tree.KIND, W.TREE_KIND_CODES[TreeKind.TUPLE], 0)
    b.PrependUOffsetTRelativeSlot(W.Tree.CHILDREN, vector, 0)
    return int(b.EndObject())


def leaf_node(b: Any, kind: TreeKind = TreeKind.LEAF) -> int:
    """A pytree node without children (a leaf, or ``kind``), with the raw builder."""
    b.StartObject(W.Tree.NUM_SLOTS)
    b.PrependInt8Slot(W.Tree.KIND, W.TREE_KIND_CODES[kind], 0)
    return int(b.EndObject())


def deep_tree() -> bytes:
    """Pytree nodes nested five times deeper than the reader allows."""
    b = flatbuffers.Builder(0)
    node = leaf_node(b)
    for _ in range(5 * MAX_TREE_DEPTH):
        node = tuple_node(b, [node])
    return raw_exported(b, node, leaf_node(b, TreeKind.NONE))


def shared_tree() -> bytes:
    """A tree whose nodes are shared exponentially: 64**6 paths to its leaf, in about 2 kB."""
    b = flatbuffers.Builder(0)
    node = leaf_node(b)
    for _ in range(6):
        node = tuple_node(b, [node] * 64)
    return raw_exported(b, node, leaf_node(b, TreeKind.NONE))


def shared_string() -> bytes:
    """A 100 kB string referred to by each of 10,000 platforms."""
    b = flatbuffers.Builder(0)
    big = b.CreateString("x" * 100_000)
    b.StartVector(4, 10_000, 4)
    for _ in range(10_000):
        b.PrependUOffsetTRelative(big)
    platforms = b.EndVector()
    none = leaf_node(b, TreeKind.NONE)
    return raw_exported(b, none, none, platforms)


def shared_vtable() -> bytes:
    """A leaf whose vtable has 30,000 slots, the child of a tuple 1,000 times over."""
    b = flatbuffers.Builder(0)
    b.StartObject(30_000)
    b.PrependInt8Slot(29_999, 1, 0)
    b.PrependInt8Slot(W.Tree.KIND, W.TREE_KIND_CODES[TreeKind.LEAF], 0)
    leaf = b.EndObject()
    return raw_exported(b, tuple_node(b, [leaf] * 1000), leaf_node(b, TreeKind.NONE))


def newer_schema() -> bytes:
    """An artifact whose root table has one slot more than this reader knows (a newer jax.export)."""
    b = flatbuffers.Builder(0)
    future = b.CreateString("a field from the future")
    none = leaf_node(b, TreeKind.NONE)
    return raw_exported(b, none, none, future=future)


def crafted_blobs() -> dict[str, bytes]:
    """The flatbuffers written by hand, by name: nesting and sharing bombs, and a newer schema."""
    return {"deep-tree": deep_tree(), "shared-tree": shared_tree(),
            "shared-string": shared_string(), "shared-vtable": shared_vtable(),
            "newer-schema": newer_schema()}


def linear_work(size: int) -> int:
    """The most bytes a reader reads for a buffer of ``size`` bytes: its budget and one read."""
    return (WORK_PER_BYTE + 2) * size + WORK_CONSTANT


@contextmanager
def recorded_readers() -> Iterator[list[WireReader]]:
    """The wire readers that decoding creates inside the block, in order.

    Each counts the bytes it read (``work_done``): a measure of the work of
    decoding that, unlike a time, is the same on every machine.
    """
    made: list[WireReader] = []

    class RecordedReader(WireReader):
        __slots__ = ()

        def __init__(self, data: bytes | memoryview, slot_counts: dict[str, int] | None = None) -> None:
            super().__init__(data, slot_counts)
            made.append(self)

    saved = getattr(flatbuffers_decode, "WireReader")
    setattr(flatbuffers_decode, "WireReader", RecordedReader)
    try:
        yield made
    finally:
        setattr(flatbuffers_decode, "WireReader", saved)
