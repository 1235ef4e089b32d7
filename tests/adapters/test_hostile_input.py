"""Bounded work on hostile input: lengths, sizes and counts are checked before use."""

from __future__ import annotations

import random
from dataclasses import replace

import flatbuffers  # type: ignore[import-untyped]
import pytest

from jaxport.adapters import flatbuffers_wire as W
from jaxport.adapters.flatbuffers_codec import decode_artifact, encode_artifact
from jaxport.adapters.flatbuffers_decode import MAX_DIM_CHARS, MAX_RANK
from jaxport.adapters.flatbuffers_reader import MAX_STRING_BYTES, WireReader
from jaxport.domain.artifact import AvalRecord, DType, TreeKind
from jaxport.domain.errors import ArtifactError
from jaxport.domain.integrity import Extension, seal

from .test_artifact_bad_bytes import leaf_node, linear_work, raw_exported, rich_record


def test_fifty_megabytes_of_random_bytes_are_refused_after_bounded_work(readers: list[WireReader]) -> None:
    blob = random.Random(0).randbytes(50 << 20)
    for candidate in (blob, b"\x10\x00\x00\x00" + blob[4:], bytes(len(blob))):
        readers.clear()
        with pytest.raises(ArtifactError):
            decode_artifact(candidate)
        reader, = readers
        assert reader.work_done <= linear_work(len(candidate))


def test_a_string_longer_than_the_limit_is_refused_before_decoding() -> None:
    b = flatbuffers.Builder(0)
    platform = b.CreateString("x" * (MAX_STRING_BYTES + 1))
    b.StartVector(4, 1, 4)
    b.PrependUOffsetTRelative(platform)
    platforms = b.EndVector()
    none = leaf_node(b, TreeKind.NONE)
    with pytest.raises(ArtifactError, match="longer than the limit"):
        decode_artifact(raw_exported(b, none, none, platforms))


def test_a_rank_or_a_dimension_text_over_the_limits_is_refused() -> None:
    record = rich_record()
    for shape in (("1",) * (MAX_RANK + 1), ("b" * (MAX_DIM_CHARS + 1),), ("",)):
        aval = AvalRecord(shape, DType.FLOAT32)
        bad = replace(record, in_avals=(aval,) + record.in_avals[1:])
        with pytest.raises(ArtifactError, match="dimension"):
            decode_artifact(encode_artifact(bad))


def test_a_sealed_artifact_with_an_oversized_or_mismatched_extension_is_refused() -> None:
    flat = bytes(encode_artifact(rich_record()))
    with pytest.raises(ArtifactError, match="constraints for 2 tables, but the artifact has 3"):
        decode_artifact(seal(flat, Extension(((), ()))))
    with pytest.raises(ArtifactError, match="at most"):
        decode_artifact(seal(flat, Extension((("x",) * 2000,))))


def test_bytes_after_the_last_object_are_refused_unless_padding_or_a_newer_schema() -> None:
    flat = bytes(encode_artifact(rich_record()))
    assert decode_artifact(flat + b"\x00" * 4) == decode_artifact(flat)
    for tail in (b"\x00\x00\x00\x01", b"\x00" * 8, b"JXPRT\x00\x7f\x02"):
        with pytest.raises(ArtifactError, match="follow the artifact's last object"):
            decode_artifact(flat + tail)
    for cut in (flat[:-1], flat + b"\x00"):
        with pytest.raises(ArtifactError, match="not a multiple of 4"):
            decode_artifact(cut)
    # A table with a slot this reader does not know (a newer jax.export) may keep
    # data where no read reaches: such an artifact is read as before.
    b = flatbuffers.Builder(0)
    future = b.CreateString("a field from the future")
    none = leaf_node(b, TreeKind.NONE)
    name = b.CreateString("f")
    module = b.CreateByteVector(b"ML\xefR\x01StableHLO_v1.15.0" + bytes(range(64)))
    b.StartObject(W.Exported.NUM_SLOTS + 1)
    b.PrependUOffsetTRelativeSlot(W.Exported.FUNCTION_NAME, name, 0)
    b.PrependUOffsetTRelativeSlot(W.Exported.IN_TREE, none, 0)
    b.PrependUOffsetTRelativeSlot(W.Exported.OUT_TREE, none, 0)
    b.PrependUOffsetTRelativeSlot(W.Exported.MLIR_MODULE, module, 0)
    b.PrependUOffsetTRelativeSlot(W.Exported.NUM_SLOTS, future, 0)
    b.Finish(b.EndObject())
    assert decode_artifact(bytes(b.Output())).function_name == "f"
