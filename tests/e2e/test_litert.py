"""End to end: ``jaxport.to_litert`` / ``jaxport convert --to litert``, then ``load_converted``, ``run``,
``inspect`` and ``check --numerics`` on the directory, without JAX; the quantized directory with its tolerance.

The module's fixtures convert the bundle (with golden examples) once in
float32 and once with ``int8-weights``: ``predict`` keeps its batch dynamic,
``loss`` is converted for b=2 (its gather from a dynamically shaped operand
cannot stay dynamic).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import jaxport
from jaxport.errors import ArtifactError, ConversionError, UsageError
from tests.helpers import iree_model
from tests.helpers import litert_model as model

pytestmark = model.needs_converter

DIMS = {"loss": [{"b": 2}]}


def examples() -> dict[str, list[tuple[tuple[object, ...], dict[str, object]]]]:
    ids = {b: iree_model.token_ids(b) for b in (1, 2, 5)}
    return {"predict": [((ids[1],), {}), ((ids[5],), {})], "loss": [((ids[2], ids[2]), {})]}


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("litert") / "model"
    jaxport.save_bundle(path, iree_model.exported(), iree_model.make_params(), examples=examples())
    return path


@pytest.fixture(scope="module")
def converted(bundle: Path) -> Path:
    path = bundle.parent / "model_litert"
    jaxport.to_litert(bundle, path, dims=DIMS)
    return path


@pytest.fixture(scope="module")
def quantized(bundle: Path) -> Path:
    path = bundle.parent / "model_int8"
    done = subprocess.run([sys.executable, "-m", "jaxport", "convert", str(bundle), "--to", "litert", "-o", str(path),
                           "--dims", "loss:b=2", "--quantize", "int8-weights"], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith(f"wrote {path}: LiteRT with 2 functions (predict, loss), 2 variants")
    assert "weights int8 (weights only), a copy in each model: loss.b=2.tflite" in done.stdout
    return path


def test_the_directory_holds_one_model_per_function_and_binding_its_examples_and_manifest(
        bundle: Path, converted: Path) -> None:
    assert sorted(os.listdir(converted)) == ["examples.safetensors", "loss.b=2.tflite", "manifest.json",
                                             "predict.tflite"]
    manifest = json.loads((converted / "manifest.json").read_text())
    assert manifest["target"] == "litert"
    assert manifest["functions"]["predict"]["variants"] == [{"file": "predict.tflite", "dims": {}}]
    assert manifest["functions"]["loss"]["variants"] == [{"file": "loss.b=2.tflite", "dims": {"b": 2}}]
    details = manifest["target_details"]
    assert details["quantize"] == "none" and details["models"]["predict.tflite"]["dynamic"] == ["b"]
    shown = subprocess.run([sys.executable, "-m", "jaxport", "inspect", str(converted)], capture_output=True,
                           text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert "target: converted by litert-converter 0.5" in shown.stdout
    assert "a copy in each model: loss.b=2.tflite 11.2 KiB, predict.tflite 11.3 KiB (dynamic b)" in shown.stdout


CHILD = """
import json, sys
import numpy as np
import jaxport
from jaxport.application.cli.main import main
from jaxport.application.conversion.numerics import check_numerics
m = jaxport.load_converted(sys.argv[1])
rng = np.random.default_rng(1)
out = {f"predict{b}": m["predict"](rng.integers(0, 32, size=(b, 8)).astype(np.int32)) for b in (1, 4, 9)}
np.savez(sys.argv[2], **out)
report = check_numerics(sys.argv[1])
status = main(["check", "--numerics", sys.argv[1]])
print(json.dumps({"report": report.to_json(), "status": status, "target": m.target,
                  "loaded": sorted(n for n in ("jax", "jaxlib", "tensorflow") if n in sys.modules)}))
"""


def test_a_process_without_jax_calls_the_directory_at_any_batch_and_checks_its_examples(
        converted: Path, tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", CHILD, str(converted), str(tmp_path / "out.npz")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    *table, last = done.stdout.strip().splitlines()
    outcome = json.loads(last)
    assert outcome["loaded"] == [] and outcome["status"] == 0 and outcome["target"] == "litert"
    report = outcome["report"]
    assert report["ok"] and report["runtime"] == "litert" and report["examples"] == 3
    got = np.load(tmp_path / "out.npz")
    rng = np.random.default_rng(1)
    for b in (1, 4, 9):
        ids = rng.integers(0, 32, size=(b, 8)).astype(np.int32)
        model.assert_close([got[f"predict{b}"]], model.expected("predict", ids))


def test_a_quantized_directory_passes_its_examples_within_the_looser_tolerance_only(
        quantized: Path, converted: Path) -> None:
    report = jaxport.check_numerics(quantized)
    assert report.ok and report.examples == 3
    assert {str(c.tolerance) for c in report.checks} == {"rtol 0.05, atol 1e-06"}
    assert not jaxport.check_numerics(quantized, rtol=1e-5, atol=1e-6).ok  # float32's: the weights were quantized
    assert {str(c.tolerance) for c in jaxport.check_numerics(converted).checks} == {"rtol 1e-05, atol 1e-06"}
    assert (quantized / "predict.tflite").stat().st_size < (converted / "predict.tflite").stat().st_size


def test_jaxport_run_answers_and_names_the_converted_sizes(converted: Path, tmp_path: Path) -> None:
    ids = tmp_path / "ids.npy"
    np.save(ids, iree_model.token_ids(3))
    done = subprocess.run([sys.executable, "-m", "jaxport", "run", str(converted), "predict", "--input", str(ids)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().startswith("result: float32[3,8,32]")
    done = subprocess.run([sys.executable, "-m", "jaxport", "run", str(converted), "loss", "--input", str(ids),
                           "--input", str(ids)], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "it was compiled for {b=2}" in done.stderr and "--dims loss:b=3" in done.stderr


def test_a_damaged_model_is_refused_before_litert_opens_it(converted: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(converted, copy)
    blob = bytearray((copy / "predict.tflite").read_bytes())
    blob[len(blob) // 2] ^= 0xFF
    (copy / "predict.tflite").write_bytes(bytes(blob))
    with pytest.raises(ArtifactError, match="predict.tflite"):
        jaxport.load_converted(copy)


def test_a_function_that_cannot_stay_dynamic_without_dims_is_refused_and_nothing_is_written(
        bundle: Path, tmp_path: Path) -> None:
    with pytest.raises(ConversionError, match=r"'loss' to LiteRT: LiteRT's converter cannot legalize the "
                                              r"operation.*--dims loss:b=8"):
        jaxport.to_litert(bundle, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_bundle_is_checked_on_litert_by_name_at_its_examples_sizes(bundle: Path) -> None:
    report = jaxport.check_numerics(bundle, runtime="litert")
    assert report.ok and report.runtime == "litert" and report.examples == 3
    assert [(c.function, c.example, c.passed) for c in report.checks] == [
        ("predict", 0, True), ("predict", 1, True), ("loss", 0, True)]


def test_load_converted_takes_litrets_runtime_options_and_refuses_others(converted: Path) -> None:
    ids = iree_model.token_ids(4)
    builtin = jaxport.load_converted(converted, xnnpack=False, num_threads=1)
    model.assert_close([np.asarray(builtin["predict"](ids))], model.expected("predict", ids))
    with pytest.raises(UsageError, match=r"LiteRT's runtime takes the options 'xnnpack' and 'num_threads' only, "
                                         r"not \['driver'\]"):
        jaxport.load_converted(converted, driver="local-sync")
    with pytest.raises(UsageError, match=r"num_threads=0 is not a positive int"):
        jaxport.load_converted(converted, num_threads=0)
