"""Golden examples: saved with a bundle, run again by ``check_numerics`` and ``jaxport check --numerics``.

The TensorFlow side (a SavedModel, a bundle checked on TensorFlow by name)
runs in the SavedModel tests' child process (tests/e2e/test_savedmodel.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import jaxport
from jaxport.application.cli.main import main
from jaxport.errors import ArtifactError, BundleError, UsageError
from tests.helpers import bundle_model as model


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return model.save(tmp_path_factory.mktemp("numerics") / "model", examples=model.examples())


@pytest.fixture(scope="module")
def swapped(saved: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundle with the weights of another seed (same shapes) and a manifest that matches them."""
    root = tmp_path_factory.mktemp("swapped")
    other = model.save(root / "other", seed=1)
    shutil.copytree(saved, root / "model")
    model.swap_weights(root / "model", other)
    return root / "model"


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


def test_a_bundle_keeps_its_examples_in_a_safetensors_file_covered_by_the_manifest(saved: Path) -> None:
    doc = json.loads((saved / "manifest.json").read_text())
    data = (saved / "examples.safetensors").read_bytes()
    assert doc["format_version"] == 2
    assert doc["files"]["examples.safetensors"] == {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    examples = doc["examples"]
    assert examples["file"] == "examples.safetensors" and list(examples["functions"]) == ["predict", "loss", "init"]
    first = examples["functions"]["predict"][1]
    assert [(a["key_path"], a["shape"]) for a in first["inputs"]] == [("predict/1/args/0", [5, 4])]
    assert [(a["key_path"], a["dtype"]) for a in first["outputs"]] == [("predict/1/out", "float32")]
    assert [a["key_path"] for a in examples["functions"]["loss"][0]["inputs"]] == ["loss/0/args/0", "loss/0/args/1"]
    header = json.loads(data[8:8 + int.from_bytes(data[:8], "little")])
    assert header["__metadata__"] == {"format": "jaxport-examples"}
    np.testing.assert_array_equal(
        np.frombuffer(data, np.float32, 12, 8 + int.from_bytes(data[:8], "little")
                      + header["predict/0/args/0"]["data_offsets"][0]).reshape(3, 4),
        np.asarray(model.inputs(3)[0]))


def test_jaxport_inspect_counts_the_examples_of_each_function(saved: Path) -> None:
    status, out, _ = cli("inspect", str(saved))
    assert status == 0
    assert "golden examples: predict 2, loss 1, init 1 (jaxport check --numerics runs them)" in out.splitlines()
    status, out, _ = cli("inspect", "--json", str(saved))
    assert json.loads(out)["examples"] == {"predict": 2, "loss": 1, "init": 1}


def test_a_bundle_without_examples_stays_in_format_version_1(tmp_path: Path) -> None:
    path = model.save(tmp_path / "plain")
    doc = json.loads((path / "manifest.json").read_text())
    assert doc["format_version"] == 1 and "examples" not in doc
    assert not (path / "examples.safetensors").exists()


def test_a_bundle_with_examples_loads_and_calls_as_before(saved: Path) -> None:
    bundle = jaxport.load_bundle(saved)
    x = model.inputs(3)[0]
    np.testing.assert_allclose(bundle["predict"](x), model.predict(model.make_params(), x), rtol=1e-6)
    assert [e.function for e in bundle.manifest.examples] == ["predict", "predict", "loss", "init"]


def test_check_numerics_runs_every_example_on_jax_and_passes(saved: Path) -> None:
    report = jaxport.check_numerics(saved)
    assert report.ok and report.runtime == "jax" and report.examples == 4
    assert [(c.function, c.example, c.output, c.dtype) for c in report.checks] == [
        ("predict", 0, "out", "float32"), ("predict", 1, "out", "float32"),
        ("loss", 0, "out", "float32"), ("init", 0, "out", "float32")]
    assert all(c.max_abs_error <= 1e-6 and c.tolerance.rtol == 1e-5 for c in report.checks)


def test_jaxport_check_numerics_prints_a_table_and_exits_0(saved: Path) -> None:
    status, out, _ = cli("check", "--numerics", str(saved))
    assert status == 0, out
    lines = out.splitlines()
    assert lines[0] == f"{saved}: 4 examples of 3 functions on jax: ok"
    assert lines[1].split() == ["function", "output", "dtype", "examples", "max", "abs", "error", "max", "rel",
                                "error", "rtol", "atol", "result"]
    assert lines[2].split()[:4] == ["predict", "out", "float32", "2"] and lines[2].endswith("pass")


def test_weights_swapped_for_others_of_the_same_shapes_fail_the_check(swapped: Path) -> None:
    jaxport.load_bundle(swapped)  # every digest matches: only the numbers tell
    report = jaxport.check_numerics(swapped)
    assert not report.ok
    failed = {(c.function, c.example) for c in report.failures}
    assert failed == {("predict", 0), ("predict", 1), ("loss", 0)}  # init takes no weights: it passes
    worst = max(report.failures, key=lambda c: c.relative_error)
    assert worst.max_abs_error > 0.1 and worst.relative_error > 1e-2


def test_jaxport_check_numerics_exits_1_with_the_failing_rows(swapped: Path) -> None:
    status, out, _ = cli("check", "--numerics", str(swapped))
    assert status == 1
    lines = out.splitlines()
    assert lines[0] == f"{swapped}: 4 examples of 3 functions on jax: FAILED (3 of 4 outputs)"
    rows = {line.split()[0]: line for line in lines[2:]}
    assert rows["predict"].endswith("FAIL (examples 0, 1)") and rows["loss"].endswith("FAIL (example 0)")
    assert rows["init"].endswith("pass")


def test_tolerances_given_replace_the_defaults_for_floating_outputs(swapped: Path) -> None:
    assert jaxport.check_numerics(swapped, atol=100.0).ok
    report = jaxport.check_numerics(swapped, rtol=0.0, atol=100.0)
    assert {(c.tolerance.rtol, c.tolerance.atol) for c in report.checks} == {(0.0, 100.0)}
    status, out, _ = cli("check", "--numerics", "--atol", "100", str(swapped))
    assert status == 0, out
    with pytest.raises(ValueError, match="atol must be a finite number >= 0"):
        jaxport.check_numerics(swapped, atol=-1.0)


def test_the_json_report_has_one_object_per_output_check(swapped: Path) -> None:
    status, out, _ = cli("check", "--numerics", "--json", str(swapped))
    assert status == 1
    doc = json.loads(out)
    assert doc["ok"] is False and doc["runtime"] == "jax" and doc["examples"] == 4
    assert [c["passed"] for c in doc["checks"]] == [False, False, False, True]
    assert doc["checks"][0]["rtol"] == 1e-5 and doc["checks"][0]["max_abs_error"] > 0.1


def test_a_damaged_examples_file_is_an_artifact_error(saved: Path, tmp_path: Path) -> None:
    path = tmp_path / "model"
    shutil.copytree(saved, path)
    data = bytearray((path / "examples.safetensors").read_bytes())
    data[-1] ^= 0xFF
    (path / "examples.safetensors").write_bytes(bytes(data))
    with pytest.raises(ArtifactError, match="digest of the bundle's file examples.safetensors does not match"):
        jaxport.check_numerics(path)
    status, out, _ = cli("check", "--numerics", str(path))
    assert status == 1 and out.startswith(f"{path}: FAILED: The digest of the bundle's file examples.safetensors")
    status, out, _ = cli("check", str(path))  # the check of the whole bundle reads it too
    assert status == 1 and out.startswith(f"{path}: FAILED: The digest of the bundle's file examples.safetensors")


def test_an_examples_file_whose_header_differs_from_the_manifest_is_an_artifact_error(
        saved: Path, tmp_path: Path) -> None:
    path = tmp_path / "model"
    shutil.copytree(saved, path)
    data = (path / "examples.safetensors").read_bytes()
    renamed = data.replace(b'"predict/1/out"', b'"predict/1/xyz"', 1)
    (path / "examples.safetensors").write_bytes(renamed)
    doc = json.loads((path / "manifest.json").read_text())
    doc["files"]["examples.safetensors"]["sha256"] = hashlib.sha256(renamed).hexdigest()
    (path / "manifest.json").write_text(json.dumps(doc))
    with pytest.raises(ArtifactError, match="examples.safetensors holds the array 'predict/1/xyz', which the "
                                            "manifest does not list"):
        jaxport.check_numerics(path)


def test_a_missing_examples_file_is_an_artifact_error(saved: Path, tmp_path: Path) -> None:
    path = tmp_path / "model"
    shutil.copytree(saved, path)
    (path / "examples.safetensors").unlink()
    with pytest.raises(ArtifactError, match="file examples.safetensors is missing"):
        jaxport.check_numerics(path)


def test_a_bundle_without_examples_does_not_pass(tmp_path: Path) -> None:
    path = model.save(tmp_path / "plain")
    report = jaxport.check_numerics(path)
    assert not report.ok and report.examples == 0
    status, out, _ = cli("check", "--numerics", str(path))
    assert status == 1 and "FAILED: no golden examples to run on jax" in out


@pytest.mark.parametrize(("examples", "match"), [
    ({"nope": []}, r"examples names functions that are not in the bundle: \['nope'\]"),
    ({"predict": [(model.inputs(3)[0],)]}, "The example 0 of 'predict' is not an .args, kwargs. pair"),
    ({"predict": ((np.zeros((3, 4), np.float32),), {})}, "The example 0 of 'predict' is not an"),
    ({"predict": [((np.zeros((3, 5), np.float32),), {})]},
     r"The example 0 of 'predict' cannot be run by the function: .*args\[1\].shape\[1\]"),
    ({"loss": [((np.zeros((3, 4), np.float32),), {})]}, "The example 0 of 'loss' cannot be run by the function"),
])
def test_examples_that_cannot_be_run_are_refused_before_anything_is_written(
        tmp_path: Path, examples: dict[str, object], match: str) -> None:
    with pytest.raises(BundleError, match=match):
        model.save(tmp_path / "model", examples=examples)
    assert list(tmp_path.iterdir()) == []


def test_a_runtime_that_is_unknown_or_cannot_run_the_directory_is_a_usage_error(saved: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="There is no runtime 'nope' to check numerics on; there are jax, savedmodel, iree"):
        jaxport.check_numerics(saved, runtime="nope")
    (tmp_path / "other").mkdir()
    with pytest.raises(ArtifactError, match="is not a bundle or a directory converted from one"):
        jaxport.check_numerics(tmp_path / "other")
    status, _, err = cli("check", "--rtol", "1e-3", str(saved))
    assert status == 2 and "--rtol goes with --numerics" in err
    status, out, err = cli("check", "--numerics", str(tmp_path / "missing"), str(saved))
    assert status == 2 and "No such file or directory" in err and f"{saved}: 4 examples" in out
