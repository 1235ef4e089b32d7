"""Symbolic dimensions used as values, side by side with jax.export."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import export as jax_export
from jax._src import core

import jaxport

EXPORTERS: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {"jaxport": (jaxport.export, jaxport.symbolic_shape),
             "jax.export": (jax_export.export, jax_export.symbolic_shape)}


@pytest.mark.parametrize("op", [operator.add, operator.sub, operator.mul, operator.truediv,
                                operator.floordiv, operator.mod])
def test_a_numpy_array_on_the_left_of_a_dimension_gives_a_jax_value(op: Any) -> None:
    def f(x: Any) -> Any:
        return op(np.arange(1, 5, dtype=np.int32), 2 * x.shape[0]), x

    x = np.ones(3, np.int32)
    results = []
    for export, symbolic_shape in EXPORTERS.values():
        exp = export(jax.jit(f))(jax.ShapeDtypeStruct(symbolic_shape("b"), np.int32))
        results.append(exp.call(x)[0])
    np.testing.assert_allclose(results[0], results[1])
    np.testing.assert_allclose(results[0], op(np.arange(1, 5), 6))


@pytest.mark.parametrize(("power", "kind"), [(-2, "negative"), (1.5, "non-integer"),
                                             (np.float32(0.5), "non-integer")])
def test_negative_and_non_integer_powers_of_a_dimension_fail_as_in_jax(power: Any, kind: str) -> None:
    for export, symbolic_shape in EXPORTERS.values():
        with pytest.raises(ValueError, match=f"Symbolic dimension cannot be raised to {kind} powers"):
            export(jax.jit(lambda x: x.shape[0] ** power))(
                jax.ShapeDtypeStruct(symbolic_shape("b"), np.float32))


@pytest.mark.parametrize("f", [lambda x: 2 ** x.shape[0], lambda x: x.shape[0] ** 3,
                               lambda x: x.shape[0] ** x.shape[0]])
def test_integer_powers_with_a_dimension_compute_as_in_jax(f: Callable[[Any], Any]) -> None:
    x = np.ones(3, np.float32)
    values = [export(jax.jit(f))(jax.ShapeDtypeStruct(symbolic_shape("b"), np.float32)).call(x)
              for export, symbolic_shape in EXPORTERS.values()]
    assert int(values[0]) == int(values[1]) == f(x)


def test_output_shapes_with_max_and_division_evaluate_in_a_nested_export() -> None:
    def output_shape(b: Any) -> tuple[Any, ...]:
        return (b + b, (b + 13) // b, (b + 13) % b, core.max_dim(b - 5, 0))

    @jax.jit
    def f(x: Any) -> Any:
        return jnp.ones(output_shape(x.shape[0]), dtype=x.dtype)

    exp = jaxport.export(f)(jax.ShapeDtypeStruct(jaxport.symbolic_shape("b"), np.float32))
    x = np.arange(7, dtype=np.float32)
    assert exp.call(x).shape == output_shape(7)
    outer = jaxport.export(jax.jit(exp.call))(jax.ShapeDtypeStruct(jaxport.symbolic_shape("a"), np.float32))
    a = outer.in_avals[0].shape[0]
    assert outer.out_avals[0].shape == output_shape(a)
    assert outer.call(x).shape == output_shape(7)
