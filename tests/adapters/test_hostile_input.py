"""Bounded work on hostile input: lengths, sizes, counts and depths are checked before use.

Each case is refused with an :class:`ArtifactError`, and the wire reader's
counted work stays within a fixed multiple of the buffer's size. The fuzz
campaign (tests/fuzz) mutates these buffers too. This module does not import JAX.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import replace

import flatbuffers  # type: ignore[import-untyped]
import pytest

from jaxport.adapters.flatbuffers import wire as W
from jaxport.adapters.flatbuffers.codec import decode_artifact, encode_artifact
from jaxport.adapters.flatbuffers.decode import MAX_DIM_CHARS, MAX_RANK, MAX_TREE_DEPTH, MAX_VJP_DEPTH
from jaxport.adapters.flatbuffers.reader import MAX_STRING_BYTES, WireReader
from jaxport.domain.artifact.record import AvalRecord, DType, TreeKind
from jaxport.domain.errors import ArtifactError
from jaxport.domain.artifact.integrity import FOOTER_SIZE, Extension, seal
from tests.helpers.artifacts import (
    deep_tree, leaf_node, linear_work, newer_schema, patched, raw_exported, rich_record,
    root_vtable, shared_string, shared_tree, shared_vtable)


def test_pytrees_nested_too_deeply_are_rejected() -> None:
    with pytest.raises(ArtifactError, match=rf"pytree nodes nest deeper than {MAX_TREE_DEPTH}"):
        decode_artifact(deep_tree())


def test_vjp_tables_nested_too_deeply_are_rejected() -> None:
    blob = encode_artifact(rich_record(MAX_VJP_DEPTH + 1))
    with pytest.raises(ArtifactError, match=rf"VJP tables nest deeper than {MAX_VJP_DEPTH}"):
        decode_artifact(blob)


@pytest.mark.parametrize(("build", "message"), [
    (shared_tree, r"refers to its data too many times"),
    (shared_string, r"field 'platforms\[\d+\]'.*too many times"),
    (shared_vtable, r"field 'children\[\d+\]'.*too many times"),
], ids=["tree", "string", "vtable"])
def test_data_shared_many_times_over_is_stopped_early(
        build: Callable[[], bytes], message: str, readers: list[WireReader]) -> None:
    blob = build()
    with pytest.raises(ArtifactError, match=message):
        decode_artifact(blob)
    reader, = readers
    assert reader.work_done <= linear_work(len(blob))


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
    # A table's slot that this reader does not know (a newer jax.export's) may point
    # to data where no read reaches: such an artifact is read as before.
    assert decode_artifact(newer_schema()).function_name == "f"


def test_unread_bytes_are_let_be_only_where_a_slot_past_the_schema_points() -> None:
    b = flatbuffers.Builder(0)
    b.CreateString("appended: nothing points here")
    none = leaf_node(b, TreeKind.NONE)
    points_elsewhere = raw_exported(b, none, none, future=none)
    blob = newer_schema()
    _, vtable = root_vtable(blob)
    emptied = patched(blob, vtable + 4 + 2 * W.Root.NUM_SLOTS, "<H", 0)  # a slot, but empty
    for bad in (points_elsewhere, emptied):
        with pytest.raises(ArtifactError, match="follow the artifact's last object"):
            decode_artifact(bad)


_FOOTER_DAMAGE: dict[str, Callable[[bytes], bytes]] = {
    "magic changed": lambda blob: patched(blob, len(blob) - 1, "<B", 0x02),
    "magic cut off": lambda blob: blob[:-8],
    "footer cut off": lambda blob: blob[:-FOOTER_SIZE],
    "bytes appended": lambda blob: blob + b"\0" * 4,
}


@pytest.mark.parametrize("damage", _FOOTER_DAMAGE.values(), ids=_FOOTER_DAMAGE.keys())
def test_a_sealed_artifact_whose_footer_is_damaged_is_refused_even_with_a_newer_schema(
        damage: Callable[[bytes], bytes]) -> None:
    # Without its magic an artifact is not sealed, so no digest vouches for it;
    # a table with a slot past the schema's last (a newer jax.export's, or a
    # vtable whose length a change raised) may keep data where no read reaches,
    # and must not make the rest of the trailer pass for such data.
    sealed = bytes(seal(newer_schema(), Extension(((),))))
    assert decode_artifact(sealed).function_name == "f"
    with pytest.raises(ArtifactError, match="jaxport trailer that is not intact"):
        decode_artifact(damage(sealed))


def test_a_damaged_footer_is_refused_where_a_table_claims_the_trailer_as_its_own() -> None:
    flat = bytes(encode_artifact(rich_record(vjp_depth=0)))  # no VJP table shares its vtable
    sealed = bytes(seal(flat, Extension(((),))))
    root, vtable = root_vtable(flat)
    # The root table's size raised over the trailer: every read stays in bounds.
    covering = patched(sealed, vtable + 2, "<H", len(sealed) - root)
    with pytest.raises(ArtifactError, match="jaxport trailer that is not intact"):
        decode_artifact(patched(covering, len(covering) - 1, "<B", 0x02))
