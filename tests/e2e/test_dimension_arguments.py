"""Modules whose ``main`` takes dimension variables as ``jax.global_constant`` arguments.

``jax.export.export`` given jaxport's symbolic dimensions (JAX 0.10 through
0.12 alike) leaves ``main``'s leading ``tensor<i32> {jax.global_constant =
"b"}`` arguments in place (see ``adapters/mlir/dimension_args.py``);
``jax.export`` cannot call its own artifact then. jaxport reads, calls
(eagerly, under ``jit``, ``grad``, ``vmap`` and ``jvp``), verifies, inspects
and converts it (SavedModel, IREE) like an artifact of the standard form.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jax
import jax.export
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport
from jaxport.errors import ShapeAssertionError

ROOT = Path(__file__).resolve().parents[2]
X = np.linspace(-1, 1, 15, dtype=np.float32).reshape(3, 5)
Y = np.linspace(0, 2, 10, dtype=np.float32).reshape(2, 5)


def f(x: Any, y: Any) -> Any:
    return jnp.sin(x).sum(axis=1) * y[0, 0] + x.shape[1]


@pytest.fixture(scope="module")
def blob() -> bytes:
    """``f`` exported by jax.export over jaxport's dimensions ``b, h`` with ``h >= 2``."""
    b, h = jaxport.symbolic_shape("b, h", constraints=("h >= 2",))
    specs = (jax.ShapeDtypeStruct((b, h), jnp.float32), jax.ShapeDtypeStruct((2, h), jnp.float32))
    blob = bytes(jax.export.export(jax.jit(f))(*specs).serialize(vjp_order=2))
    return blob


def test_jax_export_writes_dimension_arguments_for_jaxports_dimensions(blob: bytes) -> None:
    text = jaxport.deserialize(blob).mlir_module()
    main = next(line for line in text.splitlines() if "func.func public @main" in line)
    assert 'jax.global_constant = "b"' in main and 'jax.global_constant = "h"' in main


def test_called_eagerly_and_under_jit_grad_vmap_jvp(blob: bytes) -> None:
    exp = jaxport.deserialize(blob)
    want = f(X, Y)
    np.testing.assert_allclose(exp.call(X, Y), want, rtol=1e-6)
    np.testing.assert_allclose(jax.jit(exp.call)(X, Y), want, rtol=1e-6)
    np.testing.assert_allclose(jax.grad(lambda x: exp.call(x, Y).sum())(X),
                               jax.grad(lambda x: f(x, Y).sum())(X), rtol=1e-6)
    np.testing.assert_allclose(jax.vmap(exp.call, in_axes=(0, None))(np.stack([X, 2 * X]), Y),
                               jax.vmap(f, in_axes=(0, None))(np.stack([X, 2 * X]), Y), rtol=1e-6)
    _, tangent = jax.jvp(lambda x: exp.call(x, Y), (X,), (X,))
    np.testing.assert_allclose(tangent, jax.jvp(lambda x: f(x, Y), (X,), (X,))[1], rtol=1e-6)


def test_dimension_variables_are_still_checked(blob: bytes) -> None:
    # (jax.export does not record the constraints of dimensions it does not know.)
    exp = jaxport.deserialize(blob)
    with pytest.raises(ShapeAssertionError, match="h"):
        exp.call(X, Y[:, :4])


def test_verified_and_inspected(blob: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAXPORT_CACHE_DIR", str(tmp_path / "verdicts"))
    report = jaxport.verify_artifact(blob)
    assert report.ok, report.reasons
    assert str(jaxport.inspect(blob)).startswith("f(float32[b,h], float32[2,h]) -> float32[b]")


def test_converted_to_iree_and_run(blob: bytes, tmp_path: Path) -> None:
    (tmp_path / "f.jaxport").write_bytes(blob)
    jaxport.to_iree(tmp_path / "f.jaxport", tmp_path / "iree", dims={"f": [{"b": 3, "h": 5}]})
    got = jaxport.load_iree(tmp_path / "iree")["f"](X, Y)
    np.testing.assert_allclose(got, f(X, Y), rtol=1e-5)


@pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="TensorFlow is not installed")
def test_converted_to_a_savedmodel_and_run_without_jax(blob: bytes, tmp_path: Path) -> None:
    (tmp_path / "f.jaxport").write_bytes(blob)
    jaxport.to_savedmodel(tmp_path / "f.jaxport", tmp_path / "sm")
    np.save(tmp_path / "x.npy", X)
    np.save(tmp_path / "y.npy", Y)
    code = ("import sys, numpy as np\n"
            "from jaxport import load_converted\n"
            f"d = {str(tmp_path)!r}\n"
            "m = load_converted(d + '/sm')\n"
            "(name,) = m.functions\n"
            "out = m[name](np.load(d + '/x.npy'), np.load(d + '/y.npy'))\n"
            "np.save(d + '/out.npy', np.asarray(out))\n"
            "assert 'jax' not in sys.modules\n")
    env: dict[str, Any] = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2",
                           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), f(X, Y), rtol=1e-5)
