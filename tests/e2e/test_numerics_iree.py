"""Golden examples on IREE: carried by ``to_iree``, run again by ``check_numerics`` without JAX.

Each size compiles in about a second: the module's fixture converts the
bundle once (``predict`` at b=1 and b=3, ``loss`` at b=2, its examples'
sizes); the checks of a bundle on IREE by name convert into a temporary
directory each.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import jaxport
from jaxport.errors import ArtifactError
from tests.helpers import bundle_model, iree_model as model

DIMS = {"predict": [{"b": 1}, {"b": 3}], "loss": [{"b": 2}]}


def examples() -> dict[str, list[tuple[tuple[object, ...], dict[str, object]]]]:
    ids = {b: model.token_ids(b) for b in (1, 2, 3)}
    return {"predict": [((ids[1],), {}), ((ids[3],), {})], "loss": [((ids[2], ids[2]), {})]}


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("numerics_iree") / "model"
    jaxport.save_bundle(path, model.exported(), model.make_params(), examples=examples())
    return path


@pytest.fixture(scope="module")
def converted(bundle: Path) -> Path:
    path = bundle.parent / "model_iree"
    jaxport.to_iree(bundle, path, dims=DIMS)
    return path


CHILD = """
import json, sys
from jaxport.application.cli import main
from jaxport.application.numerics import check_numerics
report = check_numerics(sys.argv[1])
status = main(["check", "--numerics", sys.argv[1]])
print(json.dumps({"report": report.to_json(), "status": status,
                  "loaded": sorted(n for n in ("jax", "jaxlib", "tensorflow") if n in sys.modules)}))
"""


def test_to_iree_carries_the_examples_file_and_lists_it_in_the_manifest(bundle: Path, converted: Path) -> None:
    assert (converted / "examples.safetensors").read_bytes() == (bundle / "examples.safetensors").read_bytes()
    manifest = json.loads((converted / "manifest.json").read_text())
    assert manifest["format_version"] == 1 and "examples.safetensors" in manifest["files"]
    assert manifest["examples"] == json.loads((bundle / "manifest.json").read_text())["examples"]
    assert [e.function for e in jaxport.load_iree(converted).manifest.examples] == ["predict", "predict", "loss"]
    shown = subprocess.run([sys.executable, "-m", "jaxport", "inspect", str(converted)], capture_output=True,
                           text=True, timeout=120)
    assert "golden examples: predict 2, loss 1 (jaxport check --numerics runs them)" in shown.stdout.splitlines()


def test_check_numerics_runs_an_iree_directorys_examples_without_jax(converted: Path) -> None:
    done = subprocess.run([sys.executable, "-c", CHILD, str(converted)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    *table, last = done.stdout.strip().splitlines()
    outcome = json.loads(last)
    assert outcome["loaded"] == [] and outcome["status"] == 0
    report = outcome["report"]
    assert report["ok"] and report["runtime"] == "iree" and report["examples"] == 3
    assert [(c["function"], c["example"], c["passed"]) for c in report["checks"]] == [
        ("predict", 0, True), ("predict", 1, True), ("loss", 0, True)]
    assert table[0] == f"{converted}: 3 examples of 2 functions on iree: ok"


def test_a_bundle_is_checked_on_iree_by_name_compiled_for_its_examples_sizes(bundle: Path) -> None:
    report = jaxport.check_numerics(bundle, runtime="iree")
    assert report.ok and report.converted and report.runtime == "iree" and report.examples == 3
    assert str(report).startswith(f"{bundle}: 3 examples of 2 functions on iree (converted from the bundle): ok")


def test_weights_swapped_with_a_rewritten_manifest_fail_the_check_on_iree(bundle: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    jaxport.save_bundle(other, model.exported(), model.make_params(seed=1))
    shutil.copytree(bundle, tmp_path / "swapped")
    bundle_model.swap_weights(tmp_path / "swapped", other)
    report = jaxport.check_numerics(tmp_path / "swapped", runtime="iree")
    assert not report.ok
    assert {(c.function, c.example) for c in report.failures} == {("predict", 0), ("predict", 1), ("loss", 0)}


def test_an_example_of_a_size_not_compiled_fails_saying_so(bundle: Path, tmp_path: Path) -> None:
    jaxport.to_iree(bundle, tmp_path / "b1", dims={"predict": [{"b": 1}], "loss": [{"b": 2}]})
    report = jaxport.check_numerics(tmp_path / "b1")
    assert not report.ok
    (failure,) = report.failures
    assert (failure.function, failure.example) == ("predict", 1)
    assert failure.problem is not None
    assert failure.problem.startswith("the call failed: UncompiledSizeError: No module of 'predict' was "
                                      "compiled for b = 3")


def test_a_damaged_examples_file_of_an_iree_directory_is_an_artifact_error(converted: Path, tmp_path: Path) -> None:
    path = tmp_path / "model_iree"
    shutil.copytree(converted, path)
    data = bytearray((path / "examples.safetensors").read_bytes())
    data[-1] ^= 0xFF
    (path / "examples.safetensors").write_bytes(bytes(data))
    with pytest.raises(ArtifactError, match="digest of the directory's file examples.safetensors does not match"):
        jaxport.check_numerics(path)
