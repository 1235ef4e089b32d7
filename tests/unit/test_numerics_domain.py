"""The domain of golden examples: their names and records in a manifest, tolerances, verdicts, the report."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from jaxport.domain.artifact.record import TreeSpec
from jaxport.domain.bundle.manifest import (
    EXAMPLES_FILE, Example, FunctionEntry, Manifest, WeightRecord, examples_from_json,
    examples_to_json
)
from jaxport.domain.bundle.checks import check_files
from jaxport.domain.checked_directory import FileDigest
from jaxport.domain.bundle.names import example_names
from jaxport.domain.errors import ArtifactError
from jaxport.domain.converted.numerics import (
    DEFAULT_TOLERANCES, EXACT, NumericsReport, OutputCheck, Tolerance, check_example_fits, tolerance_for
)

LEAF = TreeSpec.leaf()
ARGS = TreeSpec.of_tuple(TreeSpec.of_tuple(LEAF), TreeSpec.of_dict({"y": LEAF}))


def example(function: str = "f", index: int = 0) -> Example:
    (x, y), (out,) = example_names(function, index, ARGS, LEAF)
    return Example(function, index, ARGS, LEAF, (WeightRecord(x, "float32", (2,), "float32", (2,)),
                                                 WeightRecord(y, "int32", (), "int32", ())),
                   (WeightRecord(out, "float32", (2,), "float32", (2,)),))


def manifest(*examples: Example) -> Manifest:
    files = {"f.jaxport": FileDigest(10, "00"), "params.safetensors": FileDigest(72, "11")}
    if examples:
        files[EXAMPLES_FILE] = FileDigest(99, "22")
    return Manifest((FunctionEntry("f", "f.jaxport"),), TreeSpec.of_dict({"w": LEAF}),
                    (WeightRecord("w", "float32", (2,), "float32", (2,)),), {}, files, examples=examples)


def test_example_arrays_are_named_by_function_index_and_key_path() -> None:
    nested = TreeSpec.of_tuple(TreeSpec.of_tuple(TreeSpec.of_list(LEAF, TreeSpec.of_dict({"a/b": LEAF}))),
                               TreeSpec.of_dict({}))
    out = TreeSpec.of_tuple(LEAF, TreeSpec.none(), LEAF)
    assert example_names("g", 3, nested, out) == (("g/3/args/0/0", "g/3/args/0/1/a~1b"), ("g/3/out/0", "g/3/out/2"))


def test_examples_round_trip_through_the_manifest() -> None:
    m = manifest(example(), example(index=1))
    again = Manifest.from_json(m.to_json())
    assert again == m
    doc = json.loads(m.to_json())
    assert doc["examples"]["file"] == EXAMPLES_FILE
    assert [x["key_path"] for x in doc["examples"]["functions"]["f"][1]["inputs"]] == ["f/1/args/0", "f/1/kwargs/y"]


def test_the_examples_file_is_one_of_the_bundle_files_only_when_there_are_examples() -> None:
    sizes = {"f.jaxport": 10, "params.safetensors": 72}
    check_files(manifest(example()), {**sizes, EXAMPLES_FILE: 99})
    check_files(manifest(), sizes)
    with pytest.raises(ArtifactError, match="file examples.safetensors is missing"):
        check_files(manifest(example()), sizes)


def test_examples_of_a_function_that_the_bundle_lacks_are_refused() -> None:
    doc = json.loads(manifest(example()).to_json())
    doc["examples"]["functions"]["g"] = doc["examples"]["functions"].pop("f")
    with pytest.raises(ArtifactError, match=r"examples of functions that the bundle lacks: \['g'\]"):
        Manifest.from_json(json.dumps(doc).encode())


def test_an_example_whose_arrays_do_not_fill_its_trees_is_refused() -> None:
    doc = examples_to_json([example()], EXAMPLES_FILE)
    doc["functions"]["f"][0]["inputs"].pop()
    with pytest.raises(ArtifactError, match=r"functions.f\[0\]: its trees have 2 inputs and 1 outputs, 1 and 1"):
        examples_from_json(doc, "manifest.json: examples", EXAMPLES_FILE)
    with pytest.raises(ArtifactError, match="'file' is not 'elsewhere.safetensors'"):
        examples_from_json(examples_to_json([example()], EXAMPLES_FILE), "m", "elsewhere.safetensors")


def test_an_example_of_other_pytrees_than_its_functions_is_refused() -> None:
    check_example_fits(example(), ARGS, LEAF, EXAMPLES_FILE)
    with pytest.raises(ArtifactError, match="the outputs of example 0 of 'f' do not have the function's pytree"):
        check_example_fits(example(), ARGS, TreeSpec.of_tuple(LEAF), EXAMPLES_FILE)


def test_tolerances_default_by_dtype_and_integers_are_exact_whatever_is_given() -> None:
    assert tolerance_for("float32") == Tolerance(1e-5, 1e-6)
    assert tolerance_for("bfloat16") == DEFAULT_TOLERANCES["bfloat16"]
    assert tolerance_for("float64", rtol=1e-3) == Tolerance(1e-3, DEFAULT_TOLERANCES["float64"].atol)
    for dtype in ("int32", "uint8", "bool", "key<fry>"):
        assert tolerance_for(dtype, rtol=1.0, atol=1.0) == EXACT
    for bad in (-1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="rtol must be a finite number >= 0"):
            tolerance_for("float32", rtol=bad)


def test_an_output_passes_when_its_error_is_within_atol_plus_rtol_times_its_scale() -> None:
    tol = Tolerance(1e-2, 1e-3)
    check = OutputCheck("f", 0, "out", "float32", tol, max_abs_error=0.011, max_reference=1.0)
    assert check.passed and check.relative_error == pytest.approx(0.011)
    assert not dataclasses.replace(check, max_abs_error=0.0111).passed
    assert not dataclasses.replace(check, max_abs_error=math.inf).passed
    on_zeros = OutputCheck("f", 0, "out", "float32", tol, max_abs_error=1e-4, max_reference=0.0)
    assert on_zeros.passed and on_zeros.relative_error == math.inf
    assert OutputCheck("f", 0, "out", "int32", EXACT).passed
    assert not OutputCheck("f", 0, "out", "int32", EXACT, max_abs_error=1.0, max_reference=5.0).passed
    assert not OutputCheck("f", 0, "out", "float32", tol, problem="the call failed").passed


def test_the_report_passes_only_with_examples_that_all_pass_and_prints_a_row_per_output() -> None:
    tol = tolerance_for("float32")
    checks = (OutputCheck("f", 0, "out[0]", "float32", tol, 2e-6, 1.0),
              OutputCheck("f", 1, "out[0]", "float32", tol, 0.5, 2.0),
              OutputCheck("f", 0, "out[1]", "int32", EXACT),
              OutputCheck("f", 1, "out[1]", "int32", EXACT, problem="the call failed: boom"))
    report = NumericsReport("m", "tf", 2, checks, converted=True)
    assert not report.ok and report.failures == checks[1::2]
    lines = str(report).splitlines()
    assert lines[0] == "m: 2 examples of 1 function on tf (converted from the bundle): FAILED (2 of 4 outputs)"
    assert lines[2].split() == ["f", "out[0]", "float32", "2", "0.5", "0.25", "1e-05", "1e-06", "FAIL", "(example", "1)"]
    assert lines[3].split() == ["f", "out[1]", "int32", "2", "0", "0", "0", "0", "FAIL", "(example", "1)"]
    assert lines[4] == "  f out[1], example 1: the call failed: boom"
    assert NumericsReport("m", "jax", 1, checks[:1]).ok
    empty = NumericsReport("m", "jax", 0, ())
    assert not empty.ok and "no golden examples to run on jax" in str(empty)
    assert json.loads(json.dumps(report.to_json()))["checks"][1]["relative_error"] == 0.25
