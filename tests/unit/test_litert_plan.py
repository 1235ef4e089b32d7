"""The LiteRT plan: which converted operators and names it refuses, and its tolerances (pure domain)."""

from __future__ import annotations

import pytest

from jaxport.domain.errors import ConversionError, UsageError
from jaxport.domain.targets.litert import (
    FLOAT32_TOLERANCE, INT8_WEIGHTS_TOLERANCE, check_names, check_operators, check_unlegalized,
    numerics_tolerance
)


def test_builtin_operators_pass_and_flex_or_custom_ones_are_refused_by_name() -> None:
    check_operators("f", [("FULLY_CONNECTED", ""), ("STABLEHLO_REDUCE_WINDOW", "")])
    with pytest.raises(ConversionError, match=r"'f' to LiteRT: the converted model needs the TensorFlow operator "
                                              r"'Cumprod' \(a Flex op\), which LiteRT's interpreter"):
        check_operators("f", [("ADD", ""), ("CUSTOM", "FlexCumprod")])
    with pytest.raises(ConversionError, match=r"calls the custom operator 'MyKernel', which LiteRT's builtin"):
        check_operators("f", [("CUSTOM", "MyKernel")])


def test_unlegalized_operations_are_named_with_advice_to_give_dims_only_when_symbolic() -> None:
    check_unlegalized("f", [], symbolic=["b"])
    with pytest.raises(ConversionError, match=r"'stablehlo.dynamic_gather' \(at x.py:3\); with symbolic shapes "
                                              r"\(dimension variables b, t\).*dims=\{'f': \[\{'b': 8, 't': 8\}, "
                                              r"\.\.\.\]\} \(on the command line --dims f:b=8,t=8\)\."):
        check_unlegalized("f", ["stablehlo.dynamic_gather"], symbolic=["b", "t"], detail="at x.py:3")
    with pytest.raises(ConversionError, match=r"the operation\(s\) 'stablehlo.sort'\.$"):
        check_unlegalized("f", ["stablehlo.sort"], symbolic=[])


def test_names_are_one_per_flat_value_and_distinct() -> None:
    check_names("f", "input", ["x", "y"], 2)
    with pytest.raises(UsageError, match="'f' has 1 flat outputs, and 0 output names were given"):
        check_names("f", "output", [], 1)


def test_the_quantized_tolerance_is_the_looser_one() -> None:
    assert numerics_tolerance({"quantize": "int8-weights"}) == INT8_WEIGHTS_TOLERANCE
    assert numerics_tolerance({"quantize": "none"}) is None  # float32: each dtype's default, FLOAT32_TOLERANCE's
    assert INT8_WEIGHTS_TOLERANCE.rtol > FLOAT32_TOLERANCE.rtol
