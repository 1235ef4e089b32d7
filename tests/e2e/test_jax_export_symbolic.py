"""``jax.export``'s own symbolic artifacts (two dimension variables and constraints), read by jaxport.

Written by the installed JAX (0.10.2 through 0.12.x): called eagerly, under
``jit``, ``grad`` and ``vmap``, its constraints checked, and converted to IREE
and to a SavedModel and run there.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import export as jax_export

import jaxport


def f(x: jax.typing.ArrayLike, y: jax.typing.ArrayLike) -> jax.Array:
    return jnp.sin(x) * y + 1.0


X = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
Y = np.random.default_rng(1).normal(size=(4,)).astype(np.float32)


@pytest.fixture(scope="module")
def blob() -> bytes:
    b, h = jax_export.symbolic_shape("b, h", constraints=("h >= 2", "b <= 64"))
    exported = jax_export.export(jax.jit(f))(jax.ShapeDtypeStruct((b, h), jnp.float32),
                                             jax.ShapeDtypeStruct((h,), jnp.float32))
    return bytes(exported.serialize(vjp_order=1))


def test_called_eagerly_and_under_jit_grad_and_vmap(blob: bytes) -> None:
    exp = jaxport.deserialize(blob)
    np.testing.assert_allclose(exp.call(X, Y), f(X, Y), rtol=1e-6)
    np.testing.assert_allclose(jax.jit(exp.call)(X, Y), f(X, Y), rtol=1e-6)
    np.testing.assert_allclose(jax.grad(lambda x: exp.call(x, Y).sum())(X),
                               jax.grad(lambda x: f(x, Y).sum())(X), rtol=1e-6)
    xs = np.stack([X, 2 * X])
    np.testing.assert_allclose(jax.vmap(exp.call, in_axes=(0, None))(xs, Y), jax.vmap(f, in_axes=(0, None))(xs, Y),
                               rtol=1e-6)


def test_its_constraints_are_checked_as_jax_export_checks_them(blob: bytes) -> None:
    # jax.export writes no constraints into the artifact's signature, only into the module's shape
    # assertions: a violated one fails when the module is refined for the call, with the error
    # type jax.export raises.
    bad = (np.ones((3, 1), np.float32), np.ones((1,), np.float32))
    with pytest.raises(Exception) as theirs:  # noqa: B017 (whatever jax.export raises)
        jax_export.deserialize(bytearray(blob)).call(*bad)
    with pytest.raises(type(theirs.value)):
        jaxport.deserialize(blob).call(*bad)


def test_converted_to_iree_and_run(blob: bytes, tmp_path: Path) -> None:
    pytest.importorskip("iree.runtime", reason="needs the jaxport[iree] extra")
    (tmp_path / "f.jaxport").write_bytes(blob)
    name = jaxport.deserialize(blob).fun_name
    jaxport.to_iree(tmp_path / "f.jaxport", tmp_path / "iree", dims={name: [{"b": 3, "h": 4}]})
    got = jaxport.load_converted(tmp_path / "iree")[name](X, Y)
    np.testing.assert_allclose(got, f(X, Y), rtol=1e-5)


@pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="needs the jaxport[tf] extra")
def test_converted_to_a_savedmodel_and_run(blob: bytes, tmp_path: Path) -> None:
    (tmp_path / "f.jaxport").write_bytes(blob)
    name = jaxport.deserialize(blob).fun_name
    jaxport.to_savedmodel(tmp_path / "f.jaxport", tmp_path / "sm")
    got = jaxport.load_converted(tmp_path / "sm")[name](X, Y)
    np.testing.assert_allclose(got, f(X, Y), rtol=1e-5)
