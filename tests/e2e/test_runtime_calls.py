"""One set of call checks through every runtime of the port: the same typed errors, the same results.

The function is exported once here (with JAX); each runtime of
``tests.helpers.runtimes.RUNTIMES`` runs every case, in this process or, for
a runtime whose import is slow (TensorFlow), all of them in one child process
that never imports JAX.
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
from tests.helpers.runtimes import CASES, FEATURES, RUNTIMES, run_cases

ROOT = Path(__file__).resolve().parents[2]
WEIGHT = np.linspace(-0.5, 0.5, FEATURES * 3, dtype=np.float32).reshape(FEATURES, 3)


def f(x: jax.Array, extra: dict[str, jax.Array]) -> dict[str, Any]:
    h = jnp.tanh(x @ WEIGHT) * extra["y"][:, None]
    return {"out": h, "total": (jnp.sum(h, axis=1),)}


@pytest.fixture(scope="module")
def artifact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    b, = jaxport.symbolic_shape("b", constraints=("b >= 2",))
    exp = jaxport.export(jax.jit(f))(jax.ShapeDtypeStruct((b, FEATURES), jnp.float32),
                                     {"y": jax.ShapeDtypeStruct((b,), jnp.float32)})
    path = tmp_path_factory.mktemp("runtime-calls") / "f.jaxport"
    jaxport.save(exp, path)
    return path


class Outcomes:
    """Each runtime's outcomes, computed on first use (one child process per slow runtime)."""

    def __init__(self, artifact: Path, root: Path) -> None:
        self.artifact = artifact
        self.root = root
        self.by_runtime: dict[str, dict[str, Any]] = {}

    def of(self, name: str) -> dict[str, Any]:
        entry = RUNTIMES[name]
        if entry.requires is not None and importlib.util.find_spec(entry.requires) is None:
            pytest.skip(f"{entry.requires} is not installed (pip install 'jaxport[{name}]')")
        if name not in self.by_runtime:
            workdir = self.root / name
            workdir.mkdir()
            if entry.in_process:
                self.by_runtime[name] = run_cases(entry.make(self.artifact, workdir))
            else:
                self.by_runtime[name] = _in_child(name, self.artifact, workdir)
        return self.by_runtime[name]


def _in_child(name: str, artifact: Path, workdir: Path) -> dict[str, Any]:
    out = workdir / "outcomes.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "tests.helpers.runtimes", name, str(artifact), str(workdir),
                           str(out)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    outcomes: dict[str, Any] = json.loads(out.read_text())
    return outcomes


@pytest.fixture(scope="module")
def outcomes(artifact: Path, tmp_path_factory: pytest.TempPathFactory) -> Outcomes:
    return Outcomes(artifact, tmp_path_factory.mktemp("runtimes"))


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("runtime", list(RUNTIMES))
def test_every_runtime_checks_a_call_as_the_domain_does(runtime: str, case: str, outcomes: Outcomes,
                                                        artifact: Path) -> None:
    got = outcomes.of(runtime)[case]
    (args, kwargs), error = CASES[case]
    if error is not None:
        assert got.get("error") == error, got.get("traceback", got)
        assert got["message"] == outcomes.of("jax")[case]["message"]
        return
    assert "result" in got, got.get("traceback", got)
    expected = jaxport.load(artifact).call(*args, **kwargs)
    np.testing.assert_allclose(got["result"]["out"], expected["out"], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got["result"]["total"], [np.asarray(expected["total"][0])], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("runtime", [name for name, e in RUNTIMES.items() if not e.in_process])
def test_a_runtime_in_a_child_process_never_imports_jax(runtime: str, outcomes: Outcomes) -> None:
    assert outcomes.of(runtime)["jax imported"] == {"result": False}


def test_the_errors_name_the_argument_and_both_values(outcomes: Outcomes) -> None:
    jax_outcomes = outcomes.of("jax")
    assert "args[0].shape[1] (expected same constant): expected (b, 4) and called with (3, 5)" in \
        jax_outcomes["wrong constant dim"]["message"]
    assert "symbolic shape constraint b >= 2" in jax_outcomes["violated constraint"]["message"]
    assert "args[1]['y'].shape[0] (= 5)" in jax_outcomes["inconsistent symbolic dims"]["message"]
