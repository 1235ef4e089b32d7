"""End to end: ONNX in reduced precision (``to_onnx(quantize=...)``, ``convert --quantize``), issue 39.

A small GPT-like model with a tied embedding (tests/helpers/quantized_models.py) and an MLP are
converted in float32, ``int8-weights``, ``int8-dynamic`` and ``int8`` (API; ``int8`` calibrated on
the golden example) and ``int4-weights`` (command line); plain onnxruntime runs the files; size and
error (largest difference over the output's largest magnitude) are asserted against the float32
directory and against round-to-nearest baselines computed with NumPy (issue 52: the weights-only modes
within 1.1x of them).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("onnx", reason="the ONNX tests need the jaxport[onnx] extra (onnx)")
pytest.importorskip("onnxruntime", reason="the ONNX tests need the jaxport[onnx] extra (onnxruntime)")

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402

import jaxport  # noqa: E402
import jaxport.domain.converted.quantization as quantization  # noqa: E402
from jaxport.domain.converted.numerics import Tolerance  # noqa: E402
from jaxport.errors import ConversionError, UsageError  # noqa: E402
from tests.helpers import quantized_models as q  # noqa: E402
from tests.helpers.quantized_models import bundle, weights  # noqa: E402,F401  (fixtures)


@pytest.fixture(scope="module")
def baselines(weights: dict[str, Any]) -> tuple[float, float]:
    return q.rtn_errors(weights, q.tokens(2, 16, seed=3))


@pytest.fixture(scope="module")
def float32(bundle: Path) -> Path:
    jaxport.to_onnx(bundle, bundle.parent / "float32")
    return bundle.parent / "float32"


@pytest.fixture(scope="module")
def int8(bundle: Path) -> Path:
    jaxport.to_onnx(bundle, bundle.parent / "int8", quantize="int8-weights")
    return bundle.parent / "int8"


@pytest.fixture(scope="module")
def dynamic(bundle: Path) -> Path:
    jaxport.to_onnx(bundle, bundle.parent / "dynamic", quantize="int8-dynamic")
    return bundle.parent / "dynamic"


@pytest.fixture(scope="module")
def static(bundle: Path) -> Path:
    """``int8``, calibrated on the bundle's golden example."""
    jaxport.to_onnx(bundle, bundle.parent / "static", quantize="int8")
    return bundle.parent / "static"


@pytest.fixture(scope="module")
def int4(bundle: Path) -> Path:
    out = bundle.parent / "int4"
    done = subprocess.run([sys.executable, "-m", "jaxport", "convert", str(bundle), "--to", "onnx", "-o", str(out),
                           "--quantize", "int4-weights"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return out


def _plain_run(directory: Path, ids: np.ndarray) -> np.ndarray:
    """The logits from plain onnxruntime on the directory's file (no jaxport)."""
    session = ort.InferenceSession(str(directory / "logits.onnx"), providers=["CPUExecutionProvider"])
    result: np.ndarray = session.run(None, {"arg0": ids})[0]
    return result


@pytest.mark.parametrize("mode", ["int8-weights", "int8-dynamic", "int4-weights", "int8"])
def test_the_quantized_model_is_smaller_and_as_accurate_as_round_to_nearest(
        mode: str, weights: dict[str, Any], baselines: tuple[float, float], float32: Path, int8: Path,
        dynamic: Path, int4: Path, static: Path) -> None:
    directory = {"int8-weights": int8, "int8-dynamic": dynamic, "int4-weights": int4, "int8": static}[mode]
    ids = q.tokens(2, 16, seed=3)  # not the calibration example
    got, want = _plain_run(directory, ids), q.logits(weights, ids)
    rtn8, rtn4 = baselines
    bound = {"int8-weights": 1.1 * rtn8, "int4-weights": 1.1 * rtn4, "int8-dynamic": 2 * rtn8,
             "int8": max(2.5 * rtn8, 0.10)}
    assert q.error(got, want) <= bound[mode], (q.error(got, want), rtn8, rtn4)
    assert q.error(got, want) > 1e-4  # quantized indeed
    ratio = q.directory_size(directory) / q.directory_size(float32)
    assert ratio <= (0.20 if mode == "int4-weights" else 0.30), ratio


def test_the_files_hold_the_standard_domain_and_the_quantized_weights_only(int8: Path, int4: Path, dynamic: Path,
                                                                           static: Path) -> None:
    assert sorted(os.listdir(int8)) == ["examples.safetensors", "logits.onnx", "manifest.json",
                                        "params.int8.safetensors"]
    assert "params.safetensors" not in os.listdir(int4)
    ops = {}
    for directory in (int8, int4, dynamic, static):
        model = onnx.load(str(directory / "logits.onnx"), load_external_data=False)
        assert {o.domain for o in model.opset_import} <= {"", "ai.onnx"}
        assert {n.domain for n in model.graph.node} <= {"", "ai.onnx"}
        ops[directory.name] = {n.op_type for n in model.graph.node}
        types = {t.data_type for t in model.graph.initializer}
        assert onnx.TensorProto.INT4 in types if directory == int4 else onnx.TensorProto.INT8 in types
    assert {"DynamicQuantizeLinear", "MatMulInteger"} <= ops["dynamic"]
    assert {"Cast", "Mul"} <= ops["int8"] and not {"DynamicQuantizeLinear", "DequantizeLinear"} & ops["int8"]
    assert {"QuantizeLinear", "DequantizeLinear", "MatMul"} <= ops["static"] and "MatMulInteger" not in ops["static"]
    assert "DequantizeLinear" in ops["int4"]


def test_the_manifest_records_the_mode_and_its_tolerance_which_check_and_inspect_use(
        int8: Path, float32: Path) -> None:
    manifest = json.loads((int8 / "manifest.json").read_text())
    recorded = manifest["quantization"]
    assert {k: recorded[k] for k in ("mode", "tolerance")} == {"mode": "int8-weights",
                                                             "tolerance": {"rtol": 0.05, "atol": 1e-06}}
    assert {w["key"] for w in recorded["weights"] if w["quantized"]} >= {"wte", "blocks/0/fc"}
    assert "quantization" not in json.loads((float32 / "manifest.json").read_text())
    report = jaxport.check_numerics(int8)
    assert report.ok and all(c.tolerance.rtol == 0.05 for c in report.checks)
    assert not jaxport.check_numerics(int8, rtol=1e-5, atol=1e-6).ok
    from jaxport.application.cli.inspect_command import inspect_converted

    assert "quantization: int8-weights" in inspect_converted(str(int8), False)
    model = jaxport.load_converted(int8)
    assert model["logits"](q.tokens(3, 5)).shape == (3, 5, q.VOCAB)


def test_a_mode_the_target_lacks_is_a_usage_error(bundle: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"Unknown quantization 'float16' for ONNX"):
        jaxport.to_onnx(bundle, tmp_path / "out", quantize="float16")
    with pytest.raises(UsageError, match=r"Unknown quantization 'int4-weights' for LiteRT"):
        jaxport.to_litert(bundle, tmp_path / "out", quantize="int4-weights")
    done = subprocess.run([sys.executable, "-m", "jaxport", "convert", str(bundle), "--to", "iree", "-o",
                           str(tmp_path / "out"), "--quantize", "int8-weights"], capture_output=True, text=True,
                          check=False)
    assert done.returncode != 0 and "--quantize" in done.stderr and not (tmp_path / "out").exists()


def test_calibration_that_does_not_fit_the_function_is_refused_naming_the_input(
        bundle: Path, tmp_path: Path) -> None:
    bad: dict[str, Any] = {"logits": [((np.zeros((1, 4), np.float32),), {})]}
    with pytest.raises(ConversionError, match=r"calibration example 0 does not fit it.*args\[0\]"):
        jaxport.to_onnx(bundle, tmp_path / "out", quantize="int8-weights", calibration=bad)
    with pytest.raises(ConversionError, match=r"'predict'.*calibration names it"):
        jaxport.to_onnx(bundle, tmp_path / "out", quantize="int8-weights", calibration={"predict": []})
    assert not (tmp_path / "out").exists()


def test_a_model_beyond_its_tolerance_is_refused_naming_function_example_and_error(
        bundle: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    strict = dict(quantization.MODES, **{"int8-weights": Tolerance(1e-5, 1e-6)})
    monkeypatch.setattr(quantization, "MODES", strict)
    with pytest.raises(ConversionError, match=r"'logits' to ONNX: golden example 0: the quantized model's out: "
                                              r"its largest error is .*beyond the int8-weights tolerance"):
        jaxport.to_onnx(bundle, tmp_path / "out", quantize="int8-weights")
    assert not (tmp_path / "out").exists()


def test_calibration_files_on_the_command_line(bundle: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    from jaxport.application.cli.main import main

    np.savez(tmp_path / "good.npz", q.tokens(1, 8, seed=7))
    np.savez(tmp_path / "bad.npz", np.zeros((1, 8), np.float32))
    command = ["convert", str(bundle), "--to", "onnx", "--quantize", "int8", "-o", str(tmp_path / "out")]
    assert main([*command, "--calibration", f"logits={tmp_path / 'bad.npz'}"]) != 0
    assert "calibration example 0 does not fit it" in capsys.readouterr().err and not (tmp_path / "out").exists()
    assert main([*command, "--calibration", "logits"]) == 2
    assert "--calibration 'logits' is not FUNCTION=FILE.npz" in capsys.readouterr().err
    assert main([*command, "--calibration", f"logits={tmp_path / 'good.npz'}"]) == 0
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["quantization"]["mode"] == "int8"


@pytest.mark.parametrize("mode", ["int8-weights", "int4-weights"])
def test_an_mlp_loses_what_round_to_nearest_loses(mode: str, tmp_path: Path) -> None:
    params = q.mlp_params()
    source = q.save_mlp(tmp_path / "mlp", params)
    jaxport.to_onnx(source, tmp_path / "out", quantize=mode)
    x = np.random.default_rng(5).normal(size=(16, q.MLP_SIZES[0])).astype(np.float32)
    session = ort.InferenceSession(str(tmp_path / "out" / "predict.onnx"), providers=["CPUExecutionProvider"])
    got, want = session.run(None, {"arg0": x})[0], q.mlp_out(params, x)
    rtn = (lambda w: q.rtn_int8(w, 1)) if mode == "int8-weights" else (lambda w: q.rtn_int4(w, 0))
    floor = q.error(q.mlp_out({k: {"w": rtn(v["w"]), "b": v["b"]} for k, v in params.items()}, x), want)
    assert 1e-4 < q.error(got, want) <= 1.1 * floor, (q.error(got, want), floor)
