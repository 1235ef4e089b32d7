"""The artifact writer lays out bytes as ``flatbuffers.Builder`` does (the package's builder is the reference).

:func:`encode_artifact` writes with :class:`FlatbufferWriter`; here the same
encoder drives the package's builder, and the bytes must be equal, for
records that use every field (with VJP chains and legacy HLO shardings), for
jax's shipped blobs decoded, for a buffer that has to grow many times, and for
every kind of vector and scalar on its own. This module does not import JAX.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import flatbuffers  # type: ignore[import-untyped]
import pytest

from jaxport.adapters.flatbuffers import encode as E
from jaxport.adapters.flatbuffers.codec import decode_artifact, encode_artifact
from jaxport.adapters.flatbuffers.writer import FlatbufferWriter
from jaxport.domain.artifact.record import ArtifactRecord
from tests.helpers.artifacts import MODULE, hlo_record, rich_record, shipped_blobs


def with_builder(record: ArtifactRecord) -> bytes:
    """The bytes the encoder writes with the ``flatbuffers`` package's builder."""
    b = flatbuffers.Builder(0)
    b.Finish(E._exported(b, record))
    return bytes(b.Output())


RECORDS: dict[str, Callable[[], ArtifactRecord]] = {
    "rich, no VJP": lambda: rich_record(0),
    "rich, VJP of order 3": lambda: rich_record(3),
    "HLO shardings": hlo_record,
    "odd-sized module": lambda: replace(rich_record(1), mlir_module_serialized=MODULE + b"xyz"),
    "large module": lambda: replace(rich_record(1), mlir_module_serialized=MODULE + bytes(300_001)),
    "with a JAX version": lambda: replace(rich_record(1), jax_version="0.12.0"),
}


@pytest.mark.parametrize("make", RECORDS.values(), ids=RECORDS.keys())
def test_records_are_written_as_the_builder_writes_them(make: Callable[[], ArtifactRecord]) -> None:
    record = make()
    blob = encode_artifact(record)
    assert bytes(blob) == with_builder(record)
    assert encode_artifact(decode_artifact(blob)) == blob


def test_shipped_blobs_are_rewritten_as_the_builder_rewrites_them() -> None:
    for blob in shipped_blobs():
        record = decode_artifact(blob)
        assert bytes(encode_artifact(record)) == with_builder(record)


def test_a_buffer_that_grows_keeps_its_bytes() -> None:
    record = rich_record(2)
    small = FlatbufferWriter(1)
    small.Finish(E._exported(small, record))
    assert bytes(small.Output()) == with_builder(record)


def drive(b: Any) -> bytes:
    """Every operation of the writer, with alignments that need padding."""
    text = b.CreateString("é")
    raw = b.CreateByteVector(b"\x01\x02\x03")
    b.StartVector(1, 3, 1)
    for x in (7, 8, 9):
        b.PrependUint8(x)
    u8 = b.EndVector()
    b.StartVector(2, 1, 2)
    b.PrependUint16(65535)
    u16 = b.EndVector()
    b.StartVector(4, 2, 4)
    for x in (1, 2):
        b.PrependUint32(x)
    u32 = b.EndVector()
    tables = []
    for flag in (True, False, True):
        b.StartObject(9)
        b.PrependBoolSlot(0, flag, False)
        b.PrependInt8Slot(1, -3, 0)
        b.PrependUint16Slot(2, 0, 0)  # the default: left out
        b.PrependUint32Slot(3, 0, None)  # no default: written
        b.PrependUOffsetTRelativeSlot(4, text, 0)
        b.PrependUOffsetTRelativeSlot(5, raw, 0)
        b.PrependUOffsetTRelativeSlot(6, u8, 0)
        b.PrependUOffsetTRelativeSlot(7, u16, 0)
        b.PrependUOffsetTRelativeSlot(8, 0, 0)  # trailing empty slot: trimmed
        tables.append(b.EndObject())
    b.StartVector(4, len(tables), 4)
    for t in reversed(tables):
        b.PrependUOffsetTRelative(t)
    vec = b.EndVector()
    b.StartObject(2)
    b.PrependUOffsetTRelativeSlot(0, vec, 0)
    b.PrependUOffsetTRelativeSlot(1, u32, 0)
    b.Finish(b.EndObject())
    return bytes(b.Output())


@pytest.mark.parametrize("size", [1, 1024])
def test_each_operation_writes_what_the_builder_writes(size: int) -> None:
    assert drive(FlatbufferWriter(size)) == drive(flatbuffers.Builder(size))


@pytest.mark.parametrize("size", [1, 1024])
@pytest.mark.parametrize("count", [0, 1, 5])
def test_a_vector_of_offsets_written_at_once_is_what_the_builder_writes_one_by_one(size: int, count: int) -> None:
    def strings(b: Any) -> list[int]:
        return [b.CreateString("x" * i) for i in range(count)]  # odd lengths: the vector needs padding

    ours = FlatbufferWriter(size)
    offsets = strings(ours)
    ours.StartVector(4, count, 4)
    ours.PrependUOffsetTRelatives(offsets)
    ours.Finish(ours.EndVector())
    theirs = flatbuffers.Builder(size)
    offsets = strings(theirs)
    theirs.StartVector(4, count, 4)
    for off in reversed(offsets):
        theirs.PrependUOffsetTRelative(off)
    theirs.Finish(theirs.EndVector())
    assert bytes(ours.Output()) == bytes(theirs.Output())


def test_a_number_out_of_range_is_a_type_error_as_with_the_builder() -> None:
    record = replace(rich_record(0), calling_convention_version=1 << 16)
    with pytest.raises(TypeError):
        with_builder(record)
    with pytest.raises(TypeError, match="does not fit its field"):
        encode_artifact(record)
    with pytest.raises(struct.error):
        FlatbufferWriter(8).PrependUint8(256)
