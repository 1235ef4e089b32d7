"""One table of bad calls through every runtime: the same typed errors, the same messages, the same results.

A bundle is saved once here (with JAX) and called through JAX twice: its
functions as the call front sees them, the weights bound ("jax"), and the
bundle's own ``load_bundle(path)[name]`` ("bundle"); for every target
of the registry, a child process converts it and another loads and calls the
converted directory, never importing JAX, jaxlib (nor TensorFlow unless the
target is TensorFlow's). A new target joins the table by being registered.
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
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport
from jaxport.domain.jax_docs import pages_for
from jaxport.application.conversion.jax_model import jax_model
from jaxport.domain.targets.registry import TARGETS
from tests.helpers.runtimes import CASES, FEATURES, HEAVY, run_cases

ROOT = Path(__file__).resolve().parents[2]
#: The runtimes run in this process, on the bundle itself.
IN_PROCESS = ("jax", "bundle")
RUNTIMES = [*IN_PROCESS, *TARGETS]


def f(params: dict[str, jax.Array], x: jax.Array, extra: dict[str, jax.Array]) -> dict[str, Any]:
    h = jnp.tanh(x @ params["w"]) * extra["y"][:, None]
    return {"out": h, "total": (jnp.sum(h, axis=1),)}


PARAMS = {"w": np.linspace(-0.5, 0.5, FEATURES * 3, dtype=np.float32).reshape(FEATURES, 3)}


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    b, = jaxport.symbolic_shape("b", constraints=("b >= 2",))
    specs = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), PARAMS)
    exp = jaxport.export(jax.jit(f))(specs, jax.ShapeDtypeStruct((b, FEATURES), jnp.float32),
                                     {"y": jax.ShapeDtypeStruct((b,), jnp.float32)})
    path = tmp_path_factory.mktemp("runtime-calls") / "model"
    jaxport.save_bundle(path, {"f": exp}, PARAMS)
    return path


def _child(*args: str) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "tests.helpers.runtimes", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]


class Outcomes:
    """Each runtime's outcomes, computed on first use."""

    def __init__(self, bundle: Path, root: Path) -> None:
        self.bundle = bundle
        self.root = root
        self.by_runtime: dict[str, dict[str, Any]] = {}

    def of(self, name: str) -> dict[str, Any]:
        if name not in IN_PROCESS:
            missing = [m for m in TARGETS[name].loads if importlib.util.find_spec(m) is None]
            if missing:
                pytest.skip(f"{missing[0]} is not installed (pip install 'jaxport[{TARGETS[name].extra}]')")
        if name not in self.by_runtime:
            if name == "jax":
                self.by_runtime[name] = run_cases(jax_model(jaxport.load_bundle(self.bundle))["f"])
            elif name == "bundle":
                self.by_runtime[name] = run_cases(jaxport.load_bundle(self.bundle)["f"])
            else:
                converted, out = self.root / name, self.root / f"{name}.json"
                _child("convert", name, str(self.bundle), str(converted))
                _child("call", str(converted), str(out))
                self.by_runtime[name] = json.loads(out.read_text())
        return self.by_runtime[name]


@pytest.fixture(scope="module")
def outcomes(bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> Outcomes:
    return Outcomes(bundle, tmp_path_factory.mktemp("runtimes"))


def _compiles_static_shapes(runtime: str) -> bool:
    return runtime not in IN_PROCESS and TARGETS[runtime].plan.needs_bindings


def _same_pages(message: str) -> str:
    """``message`` with JAX's pages at their JAX 0.12 addresses: a process with JAX cites them where
    its JAX does, one without JAX where docs.jax.dev serves them now (jaxport.domain.jax_docs)."""
    older, newer = pages_for((0, 10)), pages_for((0, 12))
    return message.replace(older.export, newer.export).replace(older.shape_poly, newer.shape_poly)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_every_runtime_refuses_a_bad_call_with_the_same_error_and_message(runtime: str, case: str,
                                                                          outcomes: Outcomes) -> None:
    got = outcomes.of(runtime)[case]
    (args, kwargs), error = CASES[case]
    if case == "uncompiled size" and not _compiles_static_shapes(runtime):
        error = None
    if error is not None:
        assert got.get("error") == error, got.get("traceback", got)
        reference = "jax" if case != "uncompiled size" else next(r for r in RUNTIMES if _compiles_static_shapes(r))
        assert _same_pages(got["message"]) == _same_pages(outcomes.of(reference)[case]["message"])
        return
    assert "result" in got, got.get("traceback", got)
    expected = f(PARAMS, *args, **kwargs)  # type: ignore[arg-type]  # NumPy weights, as jnp takes them
    np.testing.assert_allclose(got["result"]["out"], expected["out"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["result"]["total"], [np.asarray(expected["total"][0])], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("runtime", list(TARGETS))
def test_calling_a_converted_directory_imports_neither_jax_nor_another_targets_runtime(
        runtime: str, outcomes: Outcomes) -> None:
    allowed = set(TARGETS[runtime].loads)
    assert [m for m in outcomes.of(runtime)["imported"] if m not in allowed] == []


@pytest.mark.parametrize("runtime", list(TARGETS))
def test_every_runtime_refuses_at_load_a_damaged_model_under_a_resealed_manifest_and_a_bad_option(
        runtime: str, outcomes: Outcomes) -> None:
    damaged, option = outcomes.of(runtime)["damaged model"], outcomes.of(runtime)["bad option"]
    assert damaged.get("error") == "ArtifactError" and damaged["file"] in damaged["message"], damaged
    assert option.get("error") == "UsageError" and "no_such_option" in option["message"], option


def test_the_errors_name_the_argument_and_both_values(outcomes: Outcomes) -> None:
    jax_outcomes = outcomes.of("jax")
    assert "args[0].shape[1] (expected same constant): expected (b, 4) and called with (3, 5)" in \
        jax_outcomes["wrong constant dim"]["message"]
    assert "symbolic shape constraint b >= 2" in jax_outcomes["violated constraint"]["message"]
    assert "args[1]['y'].shape[0] (= 5)" in jax_outcomes["inconsistent symbolic dims"]["message"]
    assert "less the bundle's weights" in jax_outcomes["wrong tree"]["message"]
    assert set(HEAVY) >= {"jax", "jaxlib"}


def test_a_bundle_whose_weights_hold_no_array_still_binds_them(tmp_path: Path) -> None:
    def g(params: dict[str, jax.Array], x: jax.Array) -> jax.Array:
        return x * 2

    exp = jaxport.export(jax.jit(g))({}, jax.ShapeDtypeStruct((3,), jnp.float32))
    jaxport.save_bundle(tmp_path / "model", {"g": exp}, {})
    with pytest.raises(jaxport.errors.ShapeMismatchError, match=r"Shape mismatch for args\[0\]\.shape\[0\]"):
        jaxport.load_bundle(tmp_path / "model")["g"](np.ones(4, np.float32))
