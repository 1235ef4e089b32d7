"""End to end: a converted directory is verified in a separate, limited process before it is opened here.

One small bundle with golden examples is converted to ONNX once (module
fixture); each test copies it. The verdicts go to the temporary folder that
tests/conftest.py points ``JAXPORT_CACHE_DIR`` at.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("onnxruntime", reason="needs the jaxport[onnx] extra")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import jaxport  # noqa: E402
from jaxport.application.conversion import verify_directory as verification  # noqa: E402
from jaxport.errors import ArtifactError, UsageError  # noqa: E402
from tests.helpers import resealed  # noqa: E402
from tests.helpers.fake_verdicts import FakeVerdictStore, loader_on  # noqa: E402

_X = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)


def _predict(p: dict[str, jax.Array], x: jax.Array) -> jax.Array:
    return jnp.tanh(x @ p["w"] + p["b"])


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("verified")
    params = {"w": jnp.arange(12, dtype=jnp.float32).reshape(4, 3) / 10, "b": jnp.ones((3,), jnp.float32)}
    exported = jaxport.export(jax.jit(_predict))(params, jax.ShapeDtypeStruct((2, 4), jnp.float32))
    jaxport.save_bundle(root / "bundle", {"predict": exported}, params, examples={"predict": [((_X,), {})]})
    jaxport.convert(root / "bundle", root / "onnx", to="onnx")
    return root / "onnx"


@pytest.fixture()
def fresh_verdicts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "verdicts"
    monkeypatch.setenv("JAXPORT_CACHE_DIR", str(folder))
    return folder


def _directory_verdicts(folder: Path) -> list[Path]:
    """The verdicts of directories in ``folder`` (beside them: files whose digests were checked)."""
    return [p for p in folder.glob("c*.json")] if folder.exists() else []


def _copy(converted: Path, tmp_path: Path) -> Path:
    path = tmp_path / "copy"
    shutil.copytree(converted, path)
    return path


def test_the_first_load_verifies_in_a_child_and_the_second_reuses_the_verdict(
        converted: Path, fresh_verdicts: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = jaxport.load_converted(converted)
    np.testing.assert_allclose(model["predict"](_X), np.tanh(_X @ (np.arange(12).reshape(4, 3) / 10) + 1),
                               rtol=1e-5, atol=1e-6)
    assert len(_directory_verdicts(fresh_verdicts)) == 1

    def no_child(*args: object, **kwargs: object) -> None:
        raise AssertionError("a child was started")

    monkeypatch.setattr(subprocess, "run", no_child)
    jaxport.load_converted(converted)
    assert jaxport.load_converted(converted, verify=False).target == "onnx"
    from jaxport.application.conversion.api import verify_converted

    assert verify_converted(converted).cached


def test_a_loader_built_on_its_own_ports_remembers_in_its_own_store(converted: Path, fresh_verdicts: Path) -> None:
    store = FakeVerdictStore()
    loader = loader_on(store)
    first = loader.verify(converted)
    assert first.ok and not first.cached and loader.verify(converted).cached
    assert loader.load(converted)["predict"](_X).shape == (2, 3)
    assert store.verdicts and _directory_verdicts(fresh_verdicts) == []  # not the process's store


def test_a_damaged_model_file_under_a_resealed_manifest_is_refused_naming_the_directory_and_file(
        converted: Path, tmp_path: Path, fresh_verdicts: Path) -> None:
    path = _copy(converted, tmp_path)
    resealed.truncate(path, "predict.onnx")
    with pytest.raises(ArtifactError, match=f"(?s)directory {path} failed verification.*predict.onnx: the "
                                            "runtime cannot open it"):
        jaxport.load_converted(path)
    with pytest.raises(ArtifactError, match="failed verification"):  # remembered: refused again, no child
        jaxport.load_converted(path)
    assert len(_directory_verdicts(fresh_verdicts)) == 1


def test_wrong_golden_outputs_are_refused_as_a_wrong_answer(converted: Path, tmp_path: Path,
                                                            fresh_verdicts: Path) -> None:
    import onnx

    path = _copy(converted, tmp_path)
    model = onnx.load_from_string((path / "predict.onnx").read_bytes())
    for node in model.graph.node:
        if node.op_type == "Tanh":
            node.op_type = "Sigmoid"
    resealed.rewrite(path, "predict.onnx", model.SerializeToString())
    with pytest.raises(ArtifactError, match="predict.onnx.*answers golden example 0 of examples.safetensors wrongly"):
        jaxport.load_converted(path)
    assert jaxport.load_converted(path, verify=False).target == "onnx"  # the caller who trusts it


def test_a_child_that_hangs_or_dies_is_refused_and_not_remembered(
        converted: Path, fresh_verdicts: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAXPORT_VERIFY_TIMEOUT", "0.001")
    with pytest.raises(ArtifactError, match="did not answer in 0.001 s and was killed"):
        jaxport.load_converted(converted)
    monkeypatch.delenv("JAXPORT_VERIFY_TIMEOUT")
    monkeypatch.setattr(verification, "CHILD_MODULE", "tests.helpers.dying_child")
    with pytest.raises(ArtifactError, match="predict.onnx: the verifying process stopped "
                                            r"\(it was killed by SIGSEGV\)"):
        jaxport.load_converted(converted)
    assert not _directory_verdicts(fresh_verdicts)


def test_bad_runtime_options_stay_usage_errors(converted: Path, fresh_verdicts: Path) -> None:
    with pytest.raises(UsageError, match="ONNX Runtime's options are"):
        jaxport.load_converted(converted, driver="local-task")
    with pytest.raises(UsageError, match="must be JSON values"):
        jaxport.load_converted(converted, threads=object())


def test_the_verifying_child_imports_no_jax(converted: Path, fresh_verdicts: Path) -> None:
    probe = ("import runpy, sys\n"
             "sys.argv = ['verify_child', '0', '60']\n"
             "try:\n    runpy.run_module('jaxport.application.conversion.verify_child', run_name='__main__')\n"
             "except SystemExit:\n    pass\n"
             "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('jax', 'jaxlib'))\n"
             "sys.exit(3 if bad else 0)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300,
                          input=json.dumps({"path": str(converted), "options": {}}) + "\n",
                          env={**os.environ, "JAXPORT_CACHE_DIR": str(fresh_verdicts)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[-1]) == {"ok": True, "reasons": []}


def test_jaxport_check_verifies_a_converted_directory(converted: Path, tmp_path: Path,
                                                      fresh_verdicts: Path) -> None:
    bad = _copy(converted, tmp_path)
    resealed.truncate(bad, "predict.onnx")
    done = subprocess.run([sys.executable, "-m", "jaxport", "check", str(converted), str(bad)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr
    good, failed = done.stdout.splitlines()
    assert good == (f"{converted}: ok (converted for onnx, 1 function; every model file opened and every "
                    "variant called in a separate process)")
    assert failed.startswith(f"{bad}: FAILED: predict.onnx: the runtime cannot open it: ")


def test_jaxport_serve_refuses_a_directory_that_fails_verification_before_it_is_ready(
        converted: Path, tmp_path: Path, fresh_verdicts: Path) -> None:
    pytest.importorskip("kserve", reason="needs the jaxport[serve] extra")
    bad = _copy(converted, tmp_path)
    resealed.truncate(bad, "predict.onnx")
    done = subprocess.run([sys.executable, "-m", "jaxport", "serve", str(bad), "--host", "127.0.0.1",
                           "--http-port", "0", "--grpc-port", "0"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert f"directory {bad} failed verification" in done.stderr, done.stderr[-2000:]
    assert "predict.onnx: the runtime cannot open it" in done.stderr
    assert "ready:" not in done.stderr
