"""Bad bytes: every outcome of decoding is a record or an ArtifactError.

Truncated buffers, offsets and lengths that point outside the buffer, indices
out of range, strings that are not UTF-8 and unknown enum codes each raise
:class:`ArtifactError` naming the field, the table and the offset. Nesting and
sharing bombs are in test_hostile_input.py; random mutations of many artifacts
are the fuzz campaign's (tests/fuzz). This module does not import JAX.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import flatbuffers  # type: ignore[import-untyped]
import pytest

from jaxport.adapters.flatbuffers import wire as W
from jaxport.adapters.flatbuffers.codec import decode_artifact, encode_artifact
from jaxport.domain.artifact.integrity import Extension, seal
from jaxport.domain.artifact.record import ArtifactRecord, DType, MemorySpace, TreeKind
from jaxport.domain.artifact.sharding import AxisType
from jaxport.domain.errors import ArtifactError
from jaxport.domain.artifact.safety import SafetyCheckKind
from tests.helpers.artifacts import (
    field_target, hlo_record, leaf_node, patched, raw_exported, rich_record, shipped_blobs)

RICH = bytes(encode_artifact(rich_record()))


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


@pytest.mark.parametrize("sealed", [True, False], ids=["sealed", "bare"])
def test_an_artifact_whose_vjp_table_is_bad_is_refused_where_the_vjp_is_read(sealed: bool) -> None:
    # The VJP table of bytes is decoded at first use (as jax.export decodes it), so a bad one
    # is refused then, each time, sealed (its digest made valid) or not.
    record = rich_record(1)
    assert record.vjp is not None
    bad = replace(record, vjp=replace(record.vjp, mlir_module_serialized=b"not a module"))
    flat = bytes(encode_artifact(bad))
    read = decode_artifact(seal(flat, Extension(((), ()))) if sealed else flat)
    assert read.has_vjp and read.function_name == record.function_name
    for _ in range(2):
        with pytest.raises(ArtifactError, match="mlir_module_serialized.*not a StableHLO"):
            read.vjp
    good_bytes = bytes(encode_artifact(record))
    good = decode_artifact(seal(good_bytes, Extension(((), ()))) if sealed else good_bytes)
    assert good.vjp == record.vjp and good.vjp_order == 1


def test_a_mutable_buffer_is_read_whole_before_decoding_returns() -> None:
    # The caller may change or reuse a bytearray afterwards: its VJP table is read (and a bad
    # one refused) at once, and the buffer is free to be resized when decoding returns.
    record = rich_record(1)
    assert record.vjp is not None
    bad = replace(record, vjp=replace(record.vjp, mlir_module_serialized=b"not a module"))
    with pytest.raises(ArtifactError, match="mlir_module_serialized.*not a StableHLO"):
        decode_artifact(bytearray(encode_artifact(bad)))
    buffer = bytearray(encode_artifact(record))
    read = decode_artifact(buffer)
    buffer.clear()
    assert read.vjp == record.vjp


# --------------------------------------------------------------------------
# Bad bytes, one by one
# --------------------------------------------------------------------------

@pytest.mark.parametrize("blob", [b"", b"\x00", b"abc", bytes(7)])
def test_a_few_bytes_are_too_short(blob: bytes) -> None:
    with pytest.raises(ArtifactError, match=r"buffer is too short to be an artifact"):
        decode_artifact(blob)


def test_a_truncated_artifact_names_the_buffer_size() -> None:
    blob = RICH
    for size in (8, 40, len(blob) // 2, len(blob) - 16):
        with pytest.raises(ArtifactError, match=rf"the {size}-byte buffer"):
            decode_artifact(blob[:size])


def test_a_root_offset_past_the_end_is_reported() -> None:
    with pytest.raises(ArtifactError, match=r"root offset of table Exported: table Exported "
                                            r"at offset 4096 lies past the end"):
        decode_artifact(patched(shipped_blobs()[0], 0, "<I", 4096))


def test_a_vector_that_extends_past_the_end_names_field_table_and_offset() -> None:
    blob = RICH
    bad = patched(blob, field_target(blob, W.Root.PLATFORMS), "<I", 1_000_000)
    root = struct.unpack_from("<I", blob, 0)[0]
    with pytest.raises(ArtifactError, match=(
            rf"^field 'platforms' of table Exported at offset {root}: vector of 1000000 "
            rf"elements extends past the end of the {len(blob)}-byte buffer$")):
        decode_artifact(bad)


def test_an_index_out_of_range_is_reported() -> None:
    blob = RICH
    bad = patched(blob, field_target(blob, W.Root.IN_AVALS_IDXS) + 4, "<I", 99)
    with pytest.raises(ArtifactError, match=r"in_avals_idxs\[0\]'.*index 99 is out of range "
                                            r"for 6 unique_avals"):
        decode_artifact(bad)


def test_a_string_that_is_not_utf8_is_reported() -> None:
    blob = RICH
    bad = patched(blob, field_target(blob, W.Root.FUNCTION_NAME) + 4, "<B", 0xFF)
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


def test_a_tree_with_fewer_leaves_than_avals_is_rejected() -> None:
    b = flatbuffers.Builder(0)
    leaf = leaf_node(b)
    with pytest.raises(ArtifactError, match=r"field 'in_tree'.*the tree has 1 leaves for 0 avals"):
        decode_artifact(raw_exported(b, leaf, leaf))
