"""End to end: a converted directory without golden examples is verified by calling every variant in the child.

A bundle saved as the README saves one (``save_bundle(dir, fns, params)``, no
examples) is converted to each target (module fixture); each test copies it and
changes its model file, re-sealed (the manifest's size and digest rewritten),
so that the model still opens at load but fails at its first call. The
verifying child calls every variant on zeros, so the directory is refused
before this process calls it, by ``load_converted``, ``jaxport check`` and
``jaxport serve``; and a caller who skips verification gets jaxport's typed
error at the runtime's edge, naming the directory and the file.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import jaxport
from jaxport.adapters.storage.opened_directory import DiskDirectories
from jaxport.application.conversion import verify_directory as verification
from jaxport.domain.path_kind import PathKind
from jaxport.domain.artifact.verification import Verdict, verdict_key
from jaxport.errors import ArtifactError
from tests.helpers import resealed
from tests.helpers.fake_verdicts import FakeVerdictStore, loader_on
from tests.helpers.mlp_bundle import X, save_mlp_bundle

#: Each target's runtime module and the model file of its directory.
_TARGETS = {"onnx": ("onnxruntime", "predict.onnx"), "litert": ("ai_edge_litert", "predict.tflite"),
            "iree": ("iree.runtime", "predict.vmfb")}


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_mlp_bundle(tmp_path_factory.mktemp("no-examples") / "bundle", examples=False)


def _fails_at_first_call(to: str, path: Path) -> None:
    """Changes the model file of ``path`` (re-sealed) so that it opens at load and fails at its first call."""
    file = path / _TARGETS[to][1]
    data = file.read_bytes()
    if to == "onnx":  # an operator ONNX Runtime does not know: refused when the session is made
        assert data.count(b"Tanh") == 1
        changed = data.replace(b"Tanh", b"Tang")
    elif to == "iree":  # reflection that is not UTF-8: IREE's bindings fail making the function object
        changed = data.replace(b"sync func @main", b"\xffync func @main")
        assert changed != data
    else:  # a tanh whose result is int32: LiteRT refuses to prepare it when its tensors are allocated
        import flatbuffers  # type: ignore[import-untyped]
        from ai_edge_litert import schema_py_generated as tflite

        model = tflite.ModelT.InitFromPackedBuf(data, 0)
        graph = model.subgraphs[0]
        (tanh,) = [op for op in graph.operators
                   if model.operatorCodes[op.opcodeIndex].builtinCode == tflite.BuiltinOperator.TANH]
        graph.tensors[tanh.outputs[0]].type = tflite.TensorType.INT32
        builder = flatbuffers.Builder(0)
        builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
        changed = bytes(builder.Output())
    resealed.rewrite(path, file.name, changed)


@pytest.fixture(params=sorted(_TARGETS))
def damaged(request: pytest.FixtureRequest, bundle: Path, tmp_path: Path) -> tuple[str, Path]:
    to: str = request.param
    pytest.importorskip(_TARGETS[to][0])
    converted = bundle.parent / to
    if not converted.exists():
        jaxport.convert(bundle, converted, to=to)
    path = tmp_path / to
    shutil.copytree(converted, path)
    _fails_at_first_call(to, path)
    return to, path


def test_a_model_that_fails_at_its_first_call_is_refused_by_the_verifying_child(
        damaged: tuple[str, Path]) -> None:
    to, path = damaged
    assert not DiskDirectories().open(path, PathKind.CONVERTED).manifest.examples
    with pytest.raises(ArtifactError, match=f"(?s)directory {re.escape(str(path))} failed verification.*"
                                            f"{_TARGETS[to][1]}: calling 'predict' failed: "):
        jaxport.load_converted(path)


def test_without_verification_the_first_call_fails_typed_naming_the_directory_and_the_file(
        damaged: tuple[str, Path]) -> None:
    to, path = damaged
    model = jaxport.load_converted(path, verify=False)
    with pytest.raises(ArtifactError, match=f"cannot open .*{re.escape(str(path / _TARGETS[to][1]))}: "):
        model["predict"](X)


def test_jaxport_check_refuses_it_with_the_childs_reason(damaged: tuple[str, Path]) -> None:
    to, path = damaged
    done = subprocess.run([sys.executable, "-m", "jaxport", "check", str(path)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr[-2000:]
    assert done.stdout.startswith(f"{path}: FAILED: {_TARGETS[to][1]}: calling 'predict' failed: "), done.stdout


def test_jaxport_serve_refuses_it_before_it_is_ready(damaged: tuple[str, Path]) -> None:
    pytest.importorskip("kserve", reason="needs the jaxport[serve] extra")
    to, path = damaged
    done = subprocess.run([sys.executable, "-m", "jaxport", "serve", str(path), "--host", "127.0.0.1",
                           "--http-port", "0", "--grpc-port", "0"], capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert f"directory {path} failed verification" in done.stderr, done.stderr[-2000:]
    assert f"{_TARGETS[to][1]}: calling 'predict' failed" in done.stderr
    assert "ready:" not in done.stderr


def test_an_ok_verdict_of_the_earlier_checks_is_not_reused(bundle: Path, tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    path = tmp_path / "onnx"
    jaxport.convert(bundle, path, to="onnx")
    _fails_at_first_call("onnx", path)
    digest = hashlib.sha256((path / "manifest.json").read_bytes()).hexdigest()
    runtimes = verification._runtimes("onnx")  # what the verdict key depends on, as verify computes it

    def remembered(version: int) -> FakeVerdictStore:
        store = FakeVerdictStore()
        store.put(verdict_key(f"c{version}", digest, "onnx", "{}", runtimes), Verdict(True, ()))
        return store

    old = remembered(1)  # what version 1 answered for this directory: it called nothing
    found = loader_on(old).verify(path)
    assert verification.CHECKS_VERSION > 1
    assert not found.ok and not found.cached
    assert "predict.onnx: calling 'predict' failed" in found.reasons[0]
    current = remembered(verification.CHECKS_VERSION)  # the same verdict under today's key is reused
    assert loader_on(current).verify(path).cached
