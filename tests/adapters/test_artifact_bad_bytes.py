"""Bad bytes: every outcome of decoding is a record or an ArtifactError.

Truncated, corrupted, spliced and random bytes, offsets and lengths that point
outside the buffer, unknown enum codes, nesting bombs and tables shared many
times over all raise :class:`ArtifactError` naming the field, the table and
the offset; a hypothesis test mutates valid artifacts for 2,200 examples.
This module does not import JAX.
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
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from jaxport.adapters import flatbuffers_wire as W
from jaxport.adapters.flatbuffers_codec import decode_artifact, encode_artifact
from jaxport.adapters.flatbuffers_decode import MAX_TREE_DEPTH, MAX_VJP_DEPTH
from jaxport.adapters.flatbuffers_reader import WORK_CONSTANT, WORK_PER_BYTE, WireReader
from jaxport.domain.artifact import (
    AbstractDeviceRecord, AbstractMeshRecord, ArtifactRecord, AvalRecord, AxisType, DType,
    EffectRecord, HloShardingRecord, MemorySpace, NamedShardingRecord, PartitionSpecRecord,
    TreeKind, TreeSpec)
from jaxport.domain.errors import ArtifactError
from jaxport.domain.safety import DisabledSafetyCheck, SafetyCheckKind

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


SEEDS = [*shipped_blobs(), bytes(encode_artifact(rich_record())),
         bytes(encode_artifact(hlo_record()))]


def field_target(blob: bytes, slot: int) -> int:
    """Where an offset field of the root table points (test-side flatbuffers arithmetic)."""
    root = struct.unpack_from("<I", blob, 0)[0]
    vtable = root - struct.unpack_from("<i", blob, root)[0]
    at: int = root + struct.unpack_from("<H", blob, vtable + 4 + 2 * slot)[0]
    target: int = at + struct.unpack_from("<I", blob, at)[0]
    return target


def patched(blob: bytes, pos: int, fmt: str, value: int) -> bytes:
    out = bytearray(blob)
    struct.pack_into(fmt, out, pos, value)
    return bytes(out)


def outcome(blob: bytes) -> ArtifactRecord | None:
    """Decodes; a record must re-encode to bytes that are a fixed point of the codec.

    (Not necessarily to the same record: a corrupted table of unique avals may
    number wire-equal avals differently from how the writer numbers them.)
    """
    try:
        rec = decode_artifact(blob)
    except ArtifactError:
        return None
    again = encode_artifact(rec)
    assert encode_artifact(decode_artifact(again)) == again
    return rec


# --------------------------------------------------------------------------
# Valid records
# --------------------------------------------------------------------------

@pytest.mark.parametrize("record", [rich_record(), hlo_record()], ids=["named", "hlo"])
def test_every_field_survives_a_round_trip(record: ArtifactRecord) -> None:
    blob = encode_artifact(record)
    assert decode_artifact(blob) == record
    assert decode_artifact(memoryview(blob)) == record
    assert bytes(encode_artifact(decode_artifact(blob))) == bytes(blob)


def test_a_hlo_record_is_written_without_sharding_indices() -> None:
    rec = decode_artifact(encode_artifact(hlo_record()))
    assert rec.uses_hlo_shardings and not rich_record().uses_hlo_shardings


def test_an_unsupported_calling_convention_is_exposed_not_rejected() -> None:
    rec = replace(rich_record(0), calling_convention_version=99)
    assert decode_artifact(encode_artifact(rec)).calling_convention_version == 99


def test_the_vjp_order_is_the_depth_of_the_vjp_chain() -> None:
    assert rich_record(2).vjp_order == 2 and rich_record(0).vjp_order == 0


# --------------------------------------------------------------------------
# Bad bytes, one by one
# --------------------------------------------------------------------------

@pytest.mark.parametrize("blob", [b"", b"\x00", b"abc", bytes(7)])
def test_a_few_bytes_are_too_short(blob: bytes) -> None:
    with pytest.raises(ArtifactError, match=r"buffer is too short to be an artifact"):
        decode_artifact(blob)


def test_a_truncated_artifact_names_the_buffer_size() -> None:
    blob = SEEDS[-2]
    for size in (8, 40, len(blob) // 2, len(blob) - 16):
        with pytest.raises(ArtifactError, match=rf"the {size}-byte buffer"):
            decode_artifact(blob[:size])


def test_a_root_offset_past_the_end_is_reported() -> None:
    with pytest.raises(ArtifactError, match=r"root offset of table Exported: table Exported "
                                            r"at offset 4096 lies past the end"):
        decode_artifact(patched(SEEDS[0], 0, "<I", 4096))


def test_a_vector_that_extends_past_the_end_names_field_table_and_offset() -> None:
    blob = SEEDS[-2]
    bad = patched(blob, field_target(blob, W.Exported.PLATFORMS), "<I", 1_000_000)
    root = struct.unpack_from("<I", blob, 0)[0]
    with pytest.raises(ArtifactError, match=(
            rf"^field 'platforms' of table Exported at offset {root}: vector of 1000000 "
            rf"elements extends past the end of the {len(blob)}-byte buffer$")):
        decode_artifact(bad)


def test_an_index_out_of_range_is_reported() -> None:
    blob = SEEDS[-2]
    bad = patched(blob, field_target(blob, W.Exported.IN_AVALS_IDXS) + 4, "<I", 99)
    with pytest.raises(ArtifactError, match=r"in_avals_idxs\[0\]'.*index 99 is out of range "
                                            r"for 6 unique_avals"):
        decode_artifact(bad)


def test_a_string_that_is_not_utf8_is_reported() -> None:
    blob = SEEDS[-2]
    bad = patched(blob, field_target(blob, W.Exported.FUNCTION_NAME) + 4, "<B", 0xFF)
    with pytest.raises(ArtifactError, match=r"field 'function_name'.*not valid UTF-8"):
        decode_artifact(bad)


def test_module_bytes_must_be_a_stablehlo_portable_artifact() -> None:
    blob = encode_artifact(replace(rich_record(0), mlir_module_serialized=b"HloModule m"))
    with pytest.raises(ArtifactError, match=r"field 'mlir_module_serialized' of table Exported "
                                            r"at offset \d+: the module is not a StableHLO "
                                            r"portable artifact: it starts with b'HloM'"):
        decode_artifact(blob)


@contextmanager
def wire_code(table: dict[Any, int], key: Any, code: int) -> Iterator[None]:
    """Makes the writer use another (unknown) code for one enum value."""
    saved = table[key]
    table[key] = code
    try:
        yield
    finally:
        table[key] = saved


@pytest.mark.parametrize(("table", "key", "message"), [
    (W.DTYPE_CODES, DType.FLOAT32, r"field 'dtype' of table AbstractValue at offset \d+: "
                                   r"unknown dtype code 77"),
    (W.MEMORY_SPACE_CODES, MemorySpace.HOST, r"unknown memory space code 77"),
    (W.AXIS_TYPE_CODES, AxisType.MANUAL, r"field 'axis_types\[0\]'.*unknown axis type code 77"),
    (W.TREE_KIND_CODES, TreeKind.LIST, r"table PyTreeDef.*unknown pytree node kind 77"),
    (W.SAFETY_CHECK_CODES, SafetyCheckKind.SHAPE_ASSERTIONS,
     r"unknown disabled safety check kind 77"),
])
def test_unknown_enum_codes_are_reported(table: dict[Any, int], key: Any, message: str) -> None:
    with wire_code(table, key, 77):
        blob = encode_artifact(rich_record(0))
    with pytest.raises(ArtifactError, match=message):
        decode_artifact(blob)


def raw_exported(b: Any, in_tree: int, out_tree: int, platforms: int = 0) -> bytes:
    """A root Exported table (without avals) around ``in_tree``, with the raw builder."""
    name = b.CreateString("f")
    module = b.CreateByteVector(MODULE)
    b.StartObject(W.Exported.NUM_SLOTS)
    b.PrependUOffsetTRelativeSlot(W.Exported.FUNCTION_NAME, name, 0)
    b.PrependUOffsetTRelativeSlot(W.Exported.IN_TREE, in_tree, 0)
    b.PrependUOffsetTRelativeSlot(W.Exported.OUT_TREE, out_tree, 0)
    b.PrependUOffsetTRelativeSlot(W.Exported.PLATFORMS, platforms, 0)
    b.PrependUOffsetTRelativeSlot(W.Exported.MLIR_MODULE, module, 0)
    b.Finish(b.EndObject())
    return bytes(b.Output())


def tuple_node(b: Any, children: list[int]) -> int:
    b.StartVector(4, len(children), 4)
    for child in reversed(children):
        b.PrependUOffsetTRelative(child)
    vector = b.EndVector()
    b.StartObject(W.Tree.NUM_SLOTS)
    b.PrependInt8Slot(W.Tree.KIND, W.TREE_KIND_CODES[TreeKind.TUPLE], 0)
    b.PrependUOffsetTRelativeSlot(W.Tree.CHILDREN, vector, 0)
    return int(b.EndObject())


def leaf_node(b: Any, kind: TreeKind = TreeKind.LEAF) -> int:
    b.StartObject(W.Tree.NUM_SLOTS)
    b.PrependInt8Slot(W.Tree.KIND, W.TREE_KIND_CODES[kind], 0)
    return int(b.EndObject())


def test_pytrees_nested_too_deeply_are_rejected() -> None:
    b = flatbuffers.Builder(0)
    node = leaf_node(b)
    for _ in range(5 * MAX_TREE_DEPTH):
        node = tuple_node(b, [node])
    with pytest.raises(ArtifactError, match=rf"pytree nodes nest deeper than {MAX_TREE_DEPTH}"):
        decode_artifact(raw_exported(b, node, leaf_node(b, TreeKind.NONE)))


def test_vjp_tables_nested_too_deeply_are_rejected() -> None:
    blob = encode_artifact(rich_record(MAX_VJP_DEPTH + 1))
    with pytest.raises(ArtifactError, match=rf"VJP tables nest deeper than {MAX_VJP_DEPTH}"):
        decode_artifact(blob)


def linear_work(size: int) -> int:
    """The most bytes a reader reads for a buffer of ``size`` bytes: its budget and one read."""
    return (WORK_PER_BYTE + 2) * size + WORK_CONSTANT


def test_a_tree_that_shares_its_nodes_exponentially_is_stopped_early(readers: list[WireReader]) -> None:
    b = flatbuffers.Builder(0)
    node = leaf_node(b)
    for _ in range(6):  # 64**6 paths to the leaf, in about 2 kB
        node = tuple_node(b, [node] * 64)
    blob = raw_exported(b, node, leaf_node(b, TreeKind.NONE))
    with pytest.raises(ArtifactError, match=r"refers to its data too many times"):
        decode_artifact(blob)
    reader, = readers
    assert reader.work_done <= linear_work(len(blob))


def test_a_string_referred_to_many_times_is_stopped_early(readers: list[WireReader]) -> None:
    b = flatbuffers.Builder(0)
    big = b.CreateString("x" * 100_000)
    b.StartVector(4, 10_000, 4)
    for _ in range(10_000):
        b.PrependUOffsetTRelative(big)
    platforms = b.EndVector()
    none = leaf_node(b, TreeKind.NONE)
    blob = raw_exported(b, none, none, platforms)
    with pytest.raises(ArtifactError, match=r"field 'platforms\[\d+\]'.*too many times"):
        decode_artifact(blob)
    reader, = readers
    assert reader.work_done <= linear_work(len(blob))


def test_a_large_vtable_shared_by_many_tables_is_stopped_early(readers: list[WireReader]) -> None:
    b = flatbuffers.Builder(0)
    b.StartObject(30_000)  # a leaf whose vtable has 30,000 slots, read again for each reference
    b.PrependInt8Slot(29_999, 1, 0)
    b.PrependInt8Slot(W.Tree.KIND, W.TREE_KIND_CODES[TreeKind.LEAF], 0)
    leaf = b.EndObject()
    blob = raw_exported(b, tuple_node(b, [leaf] * 1000), leaf_node(b, TreeKind.NONE))
    with pytest.raises(ArtifactError, match=r"field 'children\[\d+\]'.*too many times"):
        decode_artifact(blob)
    reader, = readers
    assert reader.work_done <= linear_work(len(blob))


def test_a_tree_with_fewer_leaves_than_avals_is_rejected() -> None:
    b = flatbuffers.Builder(0)
    leaf = leaf_node(b)
    with pytest.raises(ArtifactError, match=r"field 'in_tree'.*the tree has 1 leaves for 0 avals"):
        decode_artifact(raw_exported(b, leaf, leaf))


# --------------------------------------------------------------------------
# Mutations (2,200 examples in all)
# --------------------------------------------------------------------------

FAST = settings(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SEED_INDEX = st.integers(0, len(SEEDS) - 1)


def structure_positions(blob: bytes) -> list[int]:
    """Positions outside the main module bytes (where the tables are)."""
    module = decode_artifact(blob).mlir_module_serialized
    start = blob.find(module)
    return [i for i in range(len(blob)) if not start <= i < start + len(module)]


STRUCTURE = [structure_positions(blob) for blob in SEEDS]


@settings(FAST, max_examples=700)
@given(SEED_INDEX, st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(0, 7)),
                            min_size=1, max_size=8))
def test_bit_flips_anywhere(seed: int, flips: list[tuple[int, int]]) -> None:
    blob = bytearray(SEEDS[seed])
    for pos, bit in flips:
        blob[pos % len(blob)] ^= 1 << bit
    outcome(bytes(blob))


@settings(FAST, max_examples=600)
@given(SEED_INDEX, st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(0, 255)),
                            min_size=1, max_size=4))
def test_byte_changes_in_the_tables(seed: int, changes: list[tuple[int, int]]) -> None:
    blob = bytearray(SEEDS[seed])
    positions = STRUCTURE[seed]
    for pos, value in changes:
        blob[positions[pos % len(positions)]] = value
    outcome(bytes(blob))


@settings(FAST, max_examples=300)
@given(SEED_INDEX, st.integers(0, 1 << 20))
def test_truncations(seed: int, size: int) -> None:
    blob = SEEDS[seed]
    outcome(blob[:size % len(blob)])


@settings(FAST, max_examples=400)
@given(SEED_INDEX, SEED_INDEX, st.integers(0, 1 << 20), st.integers(0, 1 << 20),
       st.integers(0, 1 << 20), st.integers(0, 64))
def test_splices_of_two_artifacts(first: int, second: int, at: int, start: int,
                                  cut: int, length: int) -> None:
    a, b = SEEDS[first], SEEDS[second]
    at, start = at % len(a), start % len(b)
    outcome(a[:at] + b[start:start + length] + a[at + cut % 64:])


@settings(FAST, max_examples=200)
@given(st.binary(max_size=512))
def test_random_bytes(blob: bytes) -> None:
    outcome(blob)
