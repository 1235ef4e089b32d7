"""Nothing parsed before it is verified: what a conversion imports, and which bytes its converter gets.

The source is the hardest case: an artifact that ``jax.export`` wrote over
jaxport's dimensions, whose ``main`` takes ``b`` as a ``jax.global_constant``
argument (tests/e2e/test_dimension_arguments.py). The verifying child
parses it, verifies it and hands back its standard form; the converters get
those bytes, and ask the child for any other form (TensorFlow's StableHLO
version, IREE's refined shapes). So, converting in a fresh process:

* to a SavedModel or to IREE imports neither ``jax`` nor ``jaxlib``;
* to ONNX imports jaxlib, not JAX: the translation walks the child's bytes
  with jaxlib's MLIR bindings;
* to LiteRT imports JAX and jaxlib: the module LiteRT's converter gets is
  built with JAX's MLIR helpers (weights as constants, shapes refined), from
  the child's bytes.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jax
import jax.export
import jax.numpy as jnp
import pytest

import jaxport
from jaxport.adapters.mlir.rewrite import ChildModuleForms, standard_request
from jaxport.adapters.mlir.serialization_form import MIXED_SERIALIZATION
from jaxport.adapters.mlir.worker import ChildModuleWorker
from jaxport.domain.targets.ports import ConversionJob, ConvertedParts
from jaxport.domain.targets.registry import TARGETS

ROOT = Path(__file__).resolve().parents[2]
#: The top-level packages of JAX that a conversion leaves loaded, per target.
LOADED = {"savedmodel": [], "iree": [], "onnx": ["jaxlib"], "litert": ["jax", "jaxlib"]}


def f(x: Any, y: Any) -> Any:
    return jnp.sin(x).sum(axis=1) * y[0, 0] + x.shape[1]


@pytest.fixture(scope="module")
def artifact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``f`` exported by jax.export over jaxport's dimension ``b`` (``main`` takes it as an argument)."""
    b, = jaxport.symbolic_shape("b", constraints=("b >= 2",))
    specs = (jax.ShapeDtypeStruct((b, 4), jnp.float32), jax.ShapeDtypeStruct((2, 4), jnp.float32))
    path = tmp_path_factory.mktemp("conversion-imports") / "f.jax"
    path.write_bytes(jax.export.export(jax.jit(f))(*specs).serialize(vjp_order=1))
    return path


def _skip_without(target: str) -> None:
    missing = [m for m in TARGETS[target].loads if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"{missing[0]} is not installed (pip install 'jaxport[{TARGETS[target].extra}]')")


def test_every_target_is_listed() -> None:
    assert sorted(LOADED) == sorted(TARGETS)


@pytest.mark.parametrize("target", sorted(LOADED))
def test_a_conversion_in_a_fresh_process_leaves_only_these_jax_modules(target: str, artifact: Path,
                                                                       tmp_path: Path) -> None:
    _skip_without(target)
    report = tmp_path / "loaded.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "tests.helpers.runtimes", "convert", target, str(artifact),
                           str(tmp_path / "out"), str(report)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    loaded = json.loads(report.read_text())
    assert sorted({m.split(".")[0] for m in loaded}) == LOADED[target], loaded[:20]


def _child_form(blob: bytes) -> bytes:
    """The standard form of the artifact's module, as a verifying process of its own makes it."""
    record = jaxport.deserialize(blob).record
    form = standard_request(record)
    assert form is not None
    worker = ChildModuleWorker()
    try:
        return worker.check(record.mlir_module_serialized, sdy=MIXED_SERIALIZATION,
                            form={"standard": form}).reserialized
    finally:
        worker.close()


def test_the_converter_gets_the_module_the_child_wrote(artifact: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    _skip_without("iree")
    from jaxport.adapters.iree import converter

    jobs: list[ConversionJob] = []
    real = converter.convert

    def capture(job: ConversionJob, staging: str) -> ConvertedParts:
        jobs.append(job)
        return real(job, staging)

    monkeypatch.setattr(converter, "convert", capture)
    jaxport.to_iree(artifact, tmp_path / "out", dims={"f": [{"b": 3}]})
    blob = artifact.read_bytes()
    record = jobs[0].functions[0].record
    assert record.mlir_module_serialized == _child_form(blob)
    assert record.mlir_module_serialized != jaxport.deserialize(blob).record.mlir_module_serialized
    assert record.vjp is None  # IREE keeps no VJP: its unverified module does not travel


def test_a_savedmodel_holds_the_childs_module_written_for_tensorflows_stablehlo(
        artifact: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _skip_without("savedmodel")
    from jaxport.adapters.savedmodel import converter
    from jaxport.adapters.savedmodel.runtime import reads_stablehlo

    modules: list[bytes] = []
    real = converter.write_savedmodel

    def capture(plan: Any, weights: Any, directory: str) -> None:
        modules.extend(fn.call.module for fn in plan.functions)
        real(plan, weights, directory)

    monkeypatch.setattr(converter, "write_savedmodel", capture)
    jaxport.to_savedmodel(artifact, tmp_path / "out")
    worker = ChildModuleWorker()
    try:
        want = ChildModuleForms(worker).for_version(_child_form(artifact.read_bytes()), reads_stablehlo())
    finally:
        worker.close()
    assert modules == [want]
