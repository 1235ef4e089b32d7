"""The quantization record and the user's choices (issue 52), pure domain: tolerances, patterns, the
manifest's report of each weight."""

from __future__ import annotations

import math

import pytest

from jaxport.domain.converted.numerics import Tolerance
from jaxport.domain.converted.quantization import (
    MODES, Quantization, WeightQuantization, check_keep_float, kept, parse_tolerance, quantization)
from jaxport.domain.errors import ArtifactError, UsageError
from jaxport.domain.targets.litert import LiteRtOptions
from jaxport.domain.targets.onnx import OnnxOptions


@pytest.mark.parametrize("given, rtol, atol", [
    ("0.5", 0.5, 1e-6), (" 0.1 , 1e-3 ", 0.1, 1e-3), (0.25, 0.25, 1e-6), ((0.2, 0.0), 0.2, 0.0),
    (Tolerance(0.3, 1e-4), 0.3, 1e-4), ("0", 0.0, 1e-6)])
def test_a_tolerance_is_rtol_and_an_optional_atol(given: object, rtol: float, atol: float) -> None:
    assert parse_tolerance(given, "int8-weights") == Tolerance(rtol, atol)


@pytest.mark.parametrize("given", ["-1", "x", "", "1,2,3", "inf", "nan", "0.1,-0.1", -0.5, math.nan, True, (),
                                   [0.1, "y"], Tolerance(-1.0, 0.0)])
def test_a_tolerance_that_is_not_one_is_a_usage_error(given: object) -> None:
    with pytest.raises(UsageError, match=r"is not RTOL\[,ATOL\]"):
        parse_tolerance(given, "int8")


def test_a_tolerance_without_a_mode_is_a_usage_error_and_none_is_none() -> None:
    assert parse_tolerance(None, None) is None and parse_tolerance(None, "int8") is None
    with pytest.raises(UsageError, match=r"applies to a quantized conversion"):
        parse_tolerance("0.5", None)


def test_the_options_read_the_command_lines_text() -> None:
    text: object = "0.5,1e-5"  # as the command line passes it
    assert OnnxOptions(quantize="int4-weights", tolerance=text).tolerance == Tolerance(0.5, 1e-5)  # type: ignore[arg-type]
    assert LiteRtOptions("int8", "0.2").tolerance == Tolerance(0.2, 1e-6)  # type: ignore[arg-type]
    assert OnnxOptions(quantize="int8-weights", auto="true").auto is True  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=r"auto 'yes' is not True or False"):
        OnnxOptions(quantize="int8-weights", auto="yes")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=r"auto applies to a quantized conversion"):
        OnnxOptions(auto=True)


def test_patterns_match_weights_by_their_path() -> None:
    weights = ["blocks/0/fc", "blocks/1/fc", "blocks/0/attn/qkv", "wte"]
    check_keep_float(["blocks/*/fc", "wte", "blocks/[01]/attn/*"], weights, "int8-weights")
    assert [w for w in weights if kept(w, ["blocks/*/fc"])] == ["blocks/0/fc", "blocks/1/fc"]
    for bad, said in (("", "is not a pattern"), ("blocks/2/*", "matches no weight"), ("Wte", "matches no weight")):
        with pytest.raises(UsageError, match=said):
            check_keep_float([bad], weights, "int8-weights")
    with pytest.raises(UsageError, match=r"keep_float applies to a quantized conversion"):
        check_keep_float(["wte"], weights, None)
    check_keep_float([], weights, None)


def test_the_record_keeps_the_weights_report_and_reads_back_what_it_wrote() -> None:
    record = quantization("int4-weights", Tolerance(0.5, 1e-6),
                          [WeightQuantization("wte", False, 0.12), WeightQuantization("fc", True, 0.05),
                           WeightQuantization("out", True)])
    assert record is not None and record.kept_float == ("wte",)
    doc = record.to_json()
    assert doc["weights"][2] == {"key": "out", "quantized": True, "contribution": None}
    assert Quantization.from_json(doc, "m") == record
    assert "weights" not in Quantization("int8", MODES["int8"]).to_json()  # as directories before issue 52
    lines = record.lines()
    assert lines[1:] == ["  weights: 2 quantized, 1 kept in float (contribution: the error with it alone quantized)",
                         "  wte: float (0.12)", "  fc: quantized (0.05)", "  out: quantized (not measured)"]


@pytest.mark.parametrize("weights", [{}, [{"key": "a"}], [{"key": "a", "quantized": 1}],
                                     [{"key": "a", "quantized": True, "contribution": -1}],
                                     [{"key": 3, "quantized": True}]])
def test_a_damaged_weights_report_is_an_artifact_error(weights: object) -> None:
    doc = {"mode": "int8", "tolerance": {"rtol": 0.1, "atol": 0.0}, "weights": weights}
    with pytest.raises(ArtifactError, match=r"manifest.json: .*'quantization.weights'"):
        Quantization.from_json(doc, "manifest.json")
