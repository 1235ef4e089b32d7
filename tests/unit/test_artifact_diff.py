"""``jaxport diff``'s comparison of two artifacts, field by field, and of their trailers."""

from __future__ import annotations

import dataclasses
from typing import Any

from jaxport.domain.artifact.record import ArtifactRecord, AvalRecord, DType, TreeKind, TreeSpec
from jaxport.domain.artifact.sharding import (
    AbstractMeshRecord, AxisType, NamedShardingRecord, PartitionSpecRecord
)
from jaxport.domain.artifact.diff import (
    COMPARED_FIELDS, NOT_COMPARED, Compared, Difference, compare, info_differences, op_count_differences,
    record_differences
)
from jaxport.domain.artifact.info import ArtifactInfo

INFO = ArtifactInfo(
    fun_name="f", signature="(float32[3]) -> float32[3]", platforms=("cpu",),
    calling_convention_version=10, nr_devices=1, in_shardings=("unspecified",),
    out_shardings=("unspecified",), ordered_effects=(), unordered_effects=(), disabled_checks=(),
    vjp_order=0, module_size=100, stablehlo_version="1.15.0")


def test_equal_summaries_have_no_differences() -> None:
    assert info_differences(INFO, dataclasses.replace(INFO)) == []


def test_each_differing_field_is_named_with_both_values() -> None:
    other = dataclasses.replace(INFO, platforms=("cpu", "tpu"), vjp_order=2, stablehlo_version=None,
                                unordered_effects=("<class 'E'>",))
    assert [str(d) for d in info_differences(INFO, other)] == [
        "platforms: cpu -> cpu, tpu", "unordered effects: none -> <class 'E'>",
        "vjp order: 0 -> 2", "StableHLO version: 1.15.0 -> unknown"]


def test_a_long_value_is_shown_on_lines_of_its_own() -> None:
    long = Difference("signature", "(" + "float32[3], " * 6 + ")", "()")
    assert str(long).splitlines() == ["signature:", f"  - {long.first}", "  + ()"]


def test_op_counts_compare_by_name_including_ops_on_one_side_only() -> None:
    found = op_count_differences({"a": 1, "b": 2}, {"b": 3, "c": 1})
    assert [(d.what, d.first, d.second) for d in found] == [
        ("module ops a", "1", "0"), ("module ops b", "2", "3"), ("module ops c", "0", "1")]
    assert op_count_differences({"a": 1}, {"a": 1}) == []


def record(**changes: Any) -> ArtifactRecord:
    """A small artifact: ``(float32[b,4], float32[b]) -> float32[b]``."""
    base = ArtifactRecord(
        function_name="f", in_tree=TreeSpec.of_tuple(TreeSpec.of_tuple(TreeSpec.leaf(), TreeSpec.leaf()),
                                                     TreeSpec.of_dict({})),
        in_avals=(AvalRecord(("b", "4"), DType.FLOAT32), AvalRecord(("b",), DType.FLOAT32)),
        out_tree=TreeSpec.leaf(), out_avals=(AvalRecord(("b",), DType.FLOAT32),),
        in_shardings=(None, None), out_shardings=(None,), nr_devices=1, platforms=("cpu",),
        ordered_effects=(), unordered_effects=(), disabled_checks=(), mlir_module_serialized=b"MODULE",
        calling_convention_version=10, module_kept_var_idx=(0, 1), uses_global_constants=True)
    return dataclasses.replace(base, **changes)


def fake_op_counts(module: bytes) -> dict[str, int]:
    """Operation counts as if each byte were an operation named after it."""
    return {f"op.{chr(b)}": module.count(b) for b in set(module)}


def diff(first: ArtifactRecord, second: ArtifactRecord, sealed: tuple[bool, bool] = (True, True)
         ) -> list[str]:
    found = compare(Compared("a.jaxport", first, sealed[0]), Compared("b.jaxport", second, sealed[1]),
                    fake_op_counts)
    return found.lines() if found.differences or found.trailer_note else []


def test_every_field_of_the_record_is_compared() -> None:
    assert COMPARED_FIELDS | NOT_COMPARED == {f.name for f in dataclasses.fields(ArtifactRecord)}


def test_the_same_record_with_the_trailer_on_one_side_only_is_the_same_program() -> None:
    found = compare(Compared("a.jaxport", record(), True), Compared("b.jaxport", record(), False), fake_op_counts)
    assert found.differences == ()
    assert found.lines() == ["same program; only a.jaxport has the jaxport trailer (it holds no symbolic constraints)"]
    assert diff(record(), record(), (False, True)) == [
        "same program; only b.jaxport has the jaxport trailer (it holds no symbolic constraints)"]


def test_the_constraints_that_only_the_trailer_records_are_said_but_do_not_differ() -> None:
    sealed = record(constraints=("b >= 16",), vjp=record(constraints=("b >= 16",)))
    plain = record(vjp=record())
    assert diff(sealed, plain, (True, False)) == [
        "same program; only a.jaxport has the jaxport trailer, with symbolic constraints that "
        "b.jaxport cannot record: b >= 16"]
    only_primal = record(constraints=("b >= 16",), vjp=record())
    assert diff(only_primal, plain, (True, False))[-1].endswith(": b >= 16; vjp() none")


def test_constraints_that_differ_between_two_sealed_artifacts_are_a_difference() -> None:
    first = record(constraints=("b >= 16",), vjp=record(constraints=("b >= 16",)))
    second = record(vjp=record(constraints=("b >= 2",)))
    assert diff(first, second) == ["symbolic constraints: b >= 16 -> none",
                                   "vjp() symbolic constraints: b >= 16 -> b >= 2"]


def test_a_real_difference_beside_the_trailer_is_named_and_the_note_stays() -> None:
    assert diff(record(), record(platforms=("cpu", "tpu")), (True, False)) == [
        "platforms: cpu -> cpu, tpu", "only a.jaxport has the jaxport trailer (it holds no symbolic constraints)"]


def test_fields_that_the_summary_does_not_show_are_named() -> None:
    assert diff(record(), record(module_kept_var_idx=(1,))) == ["kept arguments: 0, 1 -> 1"]
    assert diff(record(), record(uses_global_constants=False)) == ["needs shape refinement: True -> False"]
    assert diff(record(), record(serialization_version=2)) == ["serialization version: 3 -> 2"]
    weak = (AvalRecord(("b", "4"), DType.FLOAT32), AvalRecord(("b",), DType.FLOAT32, variant=1))
    assert diff(record(), record(in_avals=weak)) == [
        "in avals table entries: float32[b,4], float32[b] -> float32[b,4], float32[b] (entry 1)"]


def test_custom_node_data_are_compared_where_the_signature_is_the_same() -> None:
    def custom(auxdata: bytes) -> TreeSpec:
        return TreeSpec(TreeKind.CUSTOM, (TreeSpec.leaf(),), custom_name="my.Node", custom_auxdata=auxdata)

    assert diff(record(out_tree=custom(b"\x01")), record(out_tree=custom(b"\x02"))) == [
        r"out pytree node data of my.Node: b'\x01' -> b'\x02'"]


def test_shardings_are_compared_beyond_their_short_text() -> None:
    def named(axis_type: AxisType) -> NamedShardingRecord:
        mesh = AbstractMeshRecord((2,), ("x",), (axis_type,))
        return NamedShardingRecord(mesh, PartitionSpecRecord(((),)))

    found = diff(record(out_shardings=(named(AxisType.AUTO),)), record(out_shardings=(named(AxisType.EXPLICIT),)))
    assert found[0] == "out shardings[0]:" and "axis types Explicit" in found[2]


def test_the_vjp_chain_is_compared_table_by_table_with_the_table_named() -> None:
    vjp = record(function_name="f_vjp", mlir_module_serialized=b"AB")
    found = diff(record(vjp=vjp), record(vjp=dataclasses.replace(vjp, mlir_module_serialized=b"AC", platforms=("tpu",))))
    assert found == ["vjp() platforms: cpu -> tpu", "vjp() module ops op.B: 1 -> 0", "vjp() module ops op.C: 0 -> 1"]
    assert diff(record(vjp=vjp), record()) == ["vjp order: 1 -> 0"]


def test_modules_of_other_bytes_and_the_same_operations_are_said_to_differ() -> None:
    assert diff(record(), record(mlir_module_serialized=b"EMODUL")) == ["module: bytes differ -> same operation counts"]


def test_different_producers_are_no_difference_of_the_program_and_a_note_says_so() -> None:
    from jaxport.domain.artifact.producer import Producer

    old = Producer("0.1.0", "0.9.2", "0.9.2", "1.14.0")
    new = Producer("0.2.0", "0.10.2", "0.10.2", "1.15.0")
    found = compare(Compared("a.jaxport", record(producer=old), True),
                    Compared("b.jaxport", record(producer=new), True), fake_op_counts)
    assert found.differences == ()
    assert found.lines() == [f"written by different versions (not a difference of the program): "
                             f"a.jaxport: {old}; b.jaxport: {new}"]
    assert compare(Compared("a.jaxport", record(producer=new), True),
                   Compared("b.jaxport", record(producer=new), True), fake_op_counts).lines() == []


def test_weak_types_that_differ_are_one_difference() -> None:
    from tests.helpers.consumer_records import record

    weak = AvalRecord(("3",), DType.FLOAT32, weak_type=True)
    found = [str(d) for d in record_differences(record(in_avals=(weak,)), record(), op_counts=lambda _: {})]
    assert found == ["weak types: arg0 -> none"], found
