"""Symbolic constraints at export and at call, as jax.export checks them."""

from __future__ import annotations

import re
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import jaxport


def export_ab(constraints: list[str]) -> jaxport.Exported:
    spec = jax.ShapeDtypeStruct(jaxport.symbolic_shape("a, b", constraints=constraints), np.int32)
    return jaxport.export(jax.jit(lambda x: x))(spec)


def test_constraints_are_checked_at_call_also_over_rewritten_variables() -> None:
    export_ab(["a == b"]).call(np.ones((3, 3), np.int32))
    with pytest.raises(ValueError, match=re.escape("Expected 'max(a, b) - 4' to be equal to 0, but found -1")):
        export_ab(["max(a, b) == 4", "a == b"]).call(np.ones((3, 3), np.int32))
    with pytest.raises(ValueError, match=re.escape("Expected 'max(a, b) - b' to be equal to 0, but found 1")):
        export_ab(["max(a, b) == b"]).call(np.ones((3, 2), np.int32))


def test_a_slice_under_an_equality_constraint_exports_and_runs() -> None:
    def f(x: Any, y: Any) -> Any:
        return x[:y.shape[0]] + y[2:]

    scope = jaxport.SymbolicScope(["b >= 2", "min(a, b) == b - 2"])
    specs = [jax.ShapeDtypeStruct(jaxport.symbolic_shape(s, scope=scope), np.int32) for s in ("a", "b")]
    exp = jaxport.export(jax.jit(f))(*specs)
    x, y = np.arange(16, dtype=np.int32), np.arange(18, dtype=np.int32)
    np.testing.assert_array_equal(exp.call(x, y), f(x, y))


def test_mod_zero_lets_a_reshape_through_the_quotient() -> None:
    def f(x: Any) -> Any:
        b = x.shape[0]
        y = jnp.ones((1, 3, 4, b // 4), x.dtype).reshape((1, 3, -1))
        return jnp.sum(x.reshape((1, 1, b)) + y) + jnp.sum(lax.slice(x, (0,), (3 * (b // 4),)))

    spec = jax.ShapeDtypeStruct(jaxport.symbolic_shape("b", constraints=["mod(b, 4) == 0"]), np.float32)
    exp = jaxport.export(jax.jit(f))(spec)
    x = np.arange(16, dtype=np.float32)
    np.testing.assert_allclose(exp.call(x), f(x))


def test_jax_export_dimensions_export_with_their_constraints() -> None:
    m, = jax.export.symbolic_shape("m", constraints=["m >= m1"])
    with pytest.raises(ValueError, match="Encountered dimension variable 'm1'"):
        jaxport.export(jax.jit(lambda x: x))(jax.ShapeDtypeStruct((m,), np.float32))
    n, = jax.export.symbolic_shape("n", constraints=["n >= 2"])
    exp = jaxport.export(jax.jit(lambda x: x * 2))(jax.ShapeDtypeStruct((n,), np.float32))
    np.testing.assert_allclose(exp.call(np.ones(3, np.float32)), 2 * np.ones(3))
    with pytest.raises(ValueError, match=re.escape("Expected 'n - 2' to be greater or equal to 0, but found -1")):
        exp.call(np.ones(1, np.float32))
