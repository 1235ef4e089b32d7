"""``jaxport diff``'s comparison of two artifact summaries."""

from __future__ import annotations

import dataclasses

from jaxport.domain.artifact_diff import Difference, info_differences, op_count_differences
from jaxport.domain.artifact_info import ArtifactInfo

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
