"""The artifact writer's FastBuilder lays out the bytes of ``flatbuffers.Builder``.

jax.export writes artifacts with ``flatbuffers.Builder``; jaxport's writer
makes the same calls on :class:`FastBuilder`. For varied artifact records
(every kind of pytree node, dtype, memory space, sharding, mesh, effect,
disabled check, VJP nesting, odd module lengths that move the alignment),
the writer run on both builders gives the same bytes, and the same again
when FastBuilder starts too small and has to grow. The tests against
jax.export's own bytes are in test_flatbuffers_codec.py and
tests/e2e/test_artifact_interop.py.
"""

from __future__ import annotations

from collections.abc import Sequence

import flatbuffers  # type: ignore[import-untyped]
import pytest
from hypothesis import given, settings, strategies as st

from jaxport.adapters.flatbuffers_builder import FastBuilder
from jaxport.adapters.flatbuffers_codec import encode_artifact_located
from jaxport.adapters.flatbuffers_encode import write_artifact
from jaxport.domain.artifact import (
    AbstractDeviceRecord, AbstractMeshRecord, ArtifactRecord, AvalRecord, AxisType, DType,
    EffectRecord, HloShardingRecord, MemorySpace, NamedShardingRecord, PartitionSpecRecord,
    ShardingRecord, TreeKind, TreeSpec)
from jaxport.domain.safety import DisabledSafetyCheck, SafetyCheckKind


class ReferenceBuilder(flatbuffers.Builder):  # type: ignore[misc]
    """``flatbuffers.Builder`` with the writer's two whole-vector operations
    made of its own calls, in the order jax.export's writer makes them."""

    def CreateOffsetVector(self, offsets: Sequence[int]) -> int:
        self.StartVector(4, len(offsets), 4)
        for off in reversed(offsets):
            self.PrependUOffsetTRelative(off)
        return int(self.EndVector())

    def CreateScalarVector(self, values: Sequence[int], width: int) -> int:
        prepend = {1: self.PrependByte, 2: self.PrependUint16, 4: self.PrependUint32}[width]
        self.StartVector(width, len(values), width)
        for value in reversed(values):
            prepend(value)
        return int(self.EndVector())


def reference_bytes(record: ArtifactRecord) -> bytes:
    builder = ReferenceBuilder(0)
    write_artifact(builder, record)
    return bytes(builder.Output())


def fast_bytes(record: ArtifactRecord, size: int) -> bytes:
    builder = FastBuilder(size)
    write_artifact(builder, record)
    return bytes(builder.output())


# --------------------------------------------------------------------------
# Artifact records
# --------------------------------------------------------------------------

NAMES = st.text(max_size=12)
AXES = st.text(alphabet="xyzw", min_size=1, max_size=3)
SMALL = st.integers(0, 9)


def trees(leaves: int) -> st.SearchStrategy[TreeSpec]:
    """Trees with exactly ``leaves`` leaves."""
    if leaves == 0:
        return st.sampled_from([TreeSpec.none(), TreeSpec.of_tuple(), TreeSpec.of_list(),
                                TreeSpec.of_dict({})])
    if leaves == 1:
        return st.just(TreeSpec.leaf())

    @st.composite
    def split(draw: st.DrawFn) -> TreeSpec:
        cut = draw(st.integers(1, leaves - 1))
        children: tuple[TreeSpec, ...] = (draw(trees(cut)), draw(trees(leaves - cut)))
        if draw(st.booleans()):
            children += (draw(trees(0)),)
        kind = draw(st.sampled_from([TreeKind.TUPLE, TreeKind.LIST, TreeKind.DICT,
                                     TreeKind.CUSTOM]))
        if kind is TreeKind.DICT:
            return TreeSpec(kind, children, tuple(f"k{i}" for i in range(len(children))))
        if kind is TreeKind.CUSTOM:
            return TreeSpec(kind, children, (), draw(NAMES), draw(st.binary(max_size=9)))
        return TreeSpec(kind, children)

    return split()


AVALS = st.builds(AvalRecord, st.lists(st.text(min_size=1, max_size=6), max_size=4).map(tuple),
                  st.sampled_from(list(DType)), st.sampled_from(list(MemorySpace)),
                  st.integers(0, 1))


@st.composite
def meshes(draw: st.DrawFn) -> AbstractMeshRecord:
    rank = draw(st.integers(0, 3))
    device = draw(st.none() | st.builds(AbstractDeviceRecord, NAMES,
                                        st.none() | st.integers(0, 2**32 - 1), NAMES))
    return AbstractMeshRecord(
        tuple(draw(st.lists(st.integers(1, 2**32 - 1), min_size=rank, max_size=rank))),
        tuple(draw(st.lists(AXES, min_size=rank, max_size=rank))),
        tuple(draw(st.lists(st.sampled_from(list(AxisType)), min_size=rank, max_size=rank))),
        device)


NAMED = st.builds(
    NamedShardingRecord, meshes(),
    st.builds(PartitionSpecRecord, st.lists(st.lists(AXES, max_size=2).map(tuple),
                                            max_size=3).map(tuple),
              st.lists(AXES, max_size=2).map(tuple), st.lists(AXES, max_size=2).map(tuple)),
    st.none() | NAMES)
HLO = st.builds(HloShardingRecord, st.binary(max_size=11))
CHECKS = st.one_of(
    st.sampled_from([DisabledSafetyCheck(SafetyCheckKind.PLATFORM),
                     DisabledSafetyCheck(SafetyCheckKind.SHAPE_ASSERTIONS)]),
    st.text(min_size=1, max_size=8).map(DisabledSafetyCheck.custom_call))


@st.composite
def records(draw: st.DrawFn, vjp_depth: int = 2) -> ArtifactRecord:
    n_in, n_out = draw(SMALL), draw(st.integers(0, 4))
    in_avals = tuple(draw(st.lists(AVALS, min_size=n_in, max_size=n_in)))
    out_avals = tuple(draw(st.lists(AVALS, min_size=n_out, max_size=n_out)))
    # A few distinct shardings used repeatedly, so that the unique tables share.
    sharding: st.SearchStrategy[ShardingRecord | None] = st.none()
    kind = draw(st.sampled_from(["none", "named", "hlo"]))
    if kind != "none":
        pool = draw(st.lists(NAMED if kind == "named" else HLO, min_size=1, max_size=3))
        sharding = st.none() | st.sampled_from(pool)
    in_shardings = tuple(draw(st.lists(sharding, min_size=n_in, max_size=n_in)))
    out_shardings = tuple(draw(st.lists(sharding, min_size=n_out, max_size=n_out)))
    kept = tuple(sorted(draw(st.sets(st.integers(0, n_in - 1)) if n_in else st.just(set()))))
    module = b"ML\xefR" + draw(st.binary(max_size=40))
    vjp = draw(st.none() | records(vjp_depth - 1)) if vjp_depth > 0 else None
    return ArtifactRecord(
        function_name=draw(NAMES), in_tree=draw(trees(n_in)), in_avals=in_avals,
        out_tree=draw(trees(n_out)), out_avals=out_avals, in_shardings=in_shardings,
        out_shardings=out_shardings, nr_devices=draw(st.integers(0, 2**32 - 1)),
        platforms=tuple(draw(st.lists(NAMES, max_size=3))),
        ordered_effects=tuple(draw(st.lists(st.builds(EffectRecord, NAMES), max_size=2))),
        unordered_effects=tuple(draw(st.lists(st.builds(EffectRecord, NAMES), max_size=2))),
        disabled_checks=tuple(draw(st.lists(CHECKS, max_size=3))),
        mlir_module_serialized=module,
        calling_convention_version=draw(st.integers(0, 2**16 - 1)),
        module_kept_var_idx=kept, uses_global_constants=draw(st.booleans()), vjp=vjp)


# --------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------

@settings(deadline=None, derandomize=True, database=None, max_examples=150)
@given(records(), st.sampled_from([16, 64, 100_000]))
def test_fast_builder_writes_the_bytes_of_flatbuffers_builder(record: ArtifactRecord,
                                                              size: int) -> None:
    assert fast_bytes(record, size) == reference_bytes(record)


@settings(deadline=None, derandomize=True, database=None, max_examples=40)
@given(records(vjp_depth=1))
def test_the_located_module_is_the_records_module_and_the_bytes_read_back(
        record: ArtifactRecord) -> None:
    out, start = encode_artifact_located(record, spare=64)
    module = record.mlir_module_serialized
    assert out[start:start + len(module)] == module
    assert bytes(out) == reference_bytes(record)


def test_appending_the_spare_bytes_keeps_the_contents() -> None:
    record = ArtifactRecord(
        function_name="f", in_tree=TreeSpec.of_tuple(TreeSpec.of_tuple(TreeSpec.leaf()),
                                                     TreeSpec.of_dict({})),
        in_avals=(AvalRecord(("4",), DType.FLOAT32),), out_tree=TreeSpec.leaf(),
        out_avals=(AvalRecord(("4",), DType.FLOAT32),), in_shardings=(None,),
        out_shardings=(None,), nr_devices=1, platforms=("cpu",), ordered_effects=(),
        unordered_effects=(), disabled_checks=(), mlir_module_serialized=b"ML\xefR" * 1000,
        calling_convention_version=10, module_kept_var_idx=(0,), uses_global_constants=False)
    out, _ = encode_artifact_located(record, spare=100)
    before = bytes(out)
    out += b"\x01" * 300  # past the spare room: CPython copies, contents stay
    assert bytes(out[:len(before)]) == before == reference_bytes(record)


def test_an_offset_to_bytes_not_yet_written_is_refused() -> None:
    builder = FastBuilder(64)
    with pytest.raises(ValueError, match="Offset arithmetic"):
        builder.CreateOffsetVector([1000])
