"""What works where jaxport's runtime extras are installed and JAX is not (issue 36): calls on every
target that has a runtime-only extra, the CLI's inspect, run, check and serve, and the typed error of
what needs JAX. Run by ``make test-runtime-only`` (see conftest.py)."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import jaxport
from tests.helpers.runtime_only_fixtures import TARGETS

#: What the runtime extras must not install (onnx too: ONNX Runtime checks the model files alone).
NOT_INSTALLED = ("jax", "jaxlib", "tensorflow", "tensorflow-cpu", "iree-base-compiler", "litert-converter",
                 "ai-edge-quantizer", "onnx")
NEEDS_JAX = "pip install 'jaxport[jax]'"
HOST = "127.0.0.1"


def jaxport_cli(*args: str | os.PathLike[str]) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return subprocess.run([sys.executable, "-m", "jaxport", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=300)


def test_jaxport_is_the_wheel_that_the_readmes_deployment_lines_installed() -> None:
    installed = importlib.metadata.distribution("jaxport")
    assert Path(jaxport.__file__).resolve() == Path(str(installed.locate_file("jaxport/__init__.py"))).resolve()
    assert Path(jaxport.__file__).resolve().parent.name == "jaxport"  # not the clone's src/


def test_the_runtime_extras_install_no_jax_and_no_converter() -> None:
    installed = {d.metadata["Name"].lower().replace("_", "-") for d in importlib.metadata.distributions()}
    assert not installed & set(NOT_INSTALLED)
    assert importlib.util.find_spec("jax") is None and importlib.util.find_spec("jaxlib") is None


@pytest.mark.parametrize("target", TARGETS)
def test_a_converted_directory_is_loaded_and_called(fixtures: Path, target: str) -> None:
    model = jaxport.load_converted(fixtures / target)
    got = model["predict"](np.load(fixtures / "x.npy"))
    np.testing.assert_allclose(got, np.load(fixtures / "expected.npy"), rtol=1e-5, atol=1e-6)
    assert "jax" not in sys.modules


def test_inspect_reads_artifacts_bundles_and_converted_directories(fixtures: Path) -> None:
    info = jaxport.inspect(fixtures / "predict.jaxport")
    assert isinstance(info, jaxport.ArtifactInfo)
    assert "float32[2,4]" in info.signature and info.platforms == ("cpu",)
    for path in (fixtures / "predict.jaxport", fixtures / "bundle", *(fixtures / t for t in TARGETS)):
        done = jaxport_cli("inspect", path)
        assert done.returncode == 0 and "predict" in done.stdout + str(path), done.stderr


@pytest.mark.parametrize("target", TARGETS)
def test_run_writes_the_results(fixtures: Path, target: str, tmp_path: Path) -> None:
    out = tmp_path / "out.npz"
    done = jaxport_cli("run", fixtures / target, "predict", "--input", fixtures / "x.npy", "--output", out)
    assert done.returncode == 0, done.stderr
    with np.load(out) as results:
        (got,) = results.values()
    np.testing.assert_allclose(got, np.load(fixtures / "expected.npy"), rtol=1e-5, atol=1e-6)


def test_check_verifies_converted_directories_and_runs_their_examples(fixtures: Path) -> None:
    dirs = [fixtures / t for t in TARGETS]
    done = jaxport_cli("check", *dirs)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count(": ok (converted for") == len(TARGETS)
    done = jaxport_cli("check", "--numerics", *dirs)
    assert done.returncode == 0, done.stdout + done.stderr


def test_check_of_a_consumer_reads_the_table(fixtures: Path) -> None:
    info = jaxport.inspect(fixtures / "predict.jaxport")
    assert isinstance(info, jaxport.ArtifactInfo) and info.producer is not None
    producer = info.producer  # the JAX that wrote it reads it; the table is domain data
    done = jaxport_cli("check", fixtures / "predict.jaxport", "--consumer", f"jax=={producer.jax}", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["ok"] is True


def test_export_needs_jax_and_says_so_at_once() -> None:
    with pytest.raises(jaxport.errors.MissingExtraError, match=r"pip install 'jaxport\[jax\]'"):
        jaxport.export(lambda x: x)
    for name in ("save_bundle", "load_bundle", "deserialize", "Exported"):
        with pytest.raises(jaxport.errors.MissingExtraError, match=r"jaxport\[jax\]"):
            getattr(jaxport, name)
    with pytest.raises(jaxport.errors.MissingExtraError, match=r"jaxport\[jax\]"):
        jaxport.convert("unused", "unused-out", to="onnx")


def test_the_export_command_says_so_before_importing_the_module(tmp_path: Path) -> None:
    marker = tmp_path / "imported"
    (tmp_path / "users_model.py").write_text(f"open({str(marker)!r}, 'w').close()\ndef f(x):\n    return x\n")
    env_path = f"{tmp_path}{os.pathsep}"
    done = subprocess.run([sys.executable, "-m", "jaxport", "export", "users_model:f", "--arg", "f32[2]",
                           "-o", str(tmp_path / "f.jaxport")], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=env_path + os.pathsep.join(p for p in sys.path if p)),
                          cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"jaxport export: MissingExtraError: JAX (jax) is not installed: install it with {NEEDS_JAX}"]
    assert not marker.exists() and not (tmp_path / "f.jaxport").exists()


def test_serving_a_bundle_needs_jax(fixtures: Path) -> None:
    done = jaxport_cli("serve", fixtures / "bundle", "--host", HOST, "--http-port", "0", "--grpc-port", "0")
    assert done.returncode == 2 and NEEDS_JAX in done.stderr, done.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        port: int = s.getsockname()[1]
        return port


def _request(url: str, body: dict[str, Any] | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read() or b"null")


def test_serve_answers_a_request_on_a_converted_directory(fixtures: Path, tmp_path: Path) -> None:
    port = _free_port()
    log = tmp_path / "serve.log"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    with open(log, "wb") as out:
        server = subprocess.Popen([sys.executable, "-m", "jaxport", "serve", str(fixtures / "onnx"), "--host", HOST,
                                   "--http-port", str(port), "--grpc-port", str(_free_port())],
                                  stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://{HOST}:{port}/v2"
    try:
        for _ in range(1200):  # at most ~2 minutes
            assert server.poll() is None, log.read_text()
            try:
                _request(f"{url}/health/ready")
                break
            except OSError:
                time.sleep(0.1)
        metadata = _request(f"{url}/models/predict")
        (first,) = metadata["inputs"]
        x = np.load(fixtures / "x.npy")
        answer = _request(f"{url}/models/predict/infer", {"inputs": [
            {"name": first["name"], "shape": list(x.shape), "datatype": "FP32", "data": x.ravel().tolist()}]})
        (result,) = answer["outputs"]
        got = np.asarray(result["data"], np.float32).reshape(result["shape"])
        np.testing.assert_allclose(got, np.load(fixtures / "expected.npy"), rtol=1e-5, atol=1e-6)
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(10)
