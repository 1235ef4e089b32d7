"""End to end: polymorphic artifacts called from other exports, and after a trip through bytes.

A polymorphic artifact called inside another export sees the caller's own
symbolic shapes: its dimension variables are solved symbolically, its
constraints checked symbolically, and its output shapes are expressions over
the caller's variables. Artifacts keep their polymorphism through
``serialize`` and ``deserialize``, in jaxport and in ``jax.export``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport
from jaxport.domain.symbolic import ShapeAssertionError

F32 = jnp.float32


def rows(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, 3)).astype(np.float32)


def assert_same_results(actual: Any, expected: Any) -> None:
    assert str(jax.tree.structure(actual)) == str(jax.tree.structure(expected))
    for a, e in zip(jax.tree.leaves(actual), jax.tree.leaves(expected), strict=True):
        assert np.shape(a) == np.shape(e)
        np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=2e-5, atol=2e-5)


def inner_f(x: Any) -> Any:
    return jnp.tanh(x) * x.shape[0], jnp.sum(x, axis=1)


@functools.cache
def inner(exporter: str = "jaxport") -> Any:
    """``inner_f`` exported for ``(b, 3)`` by jaxport or by ``jax.export``."""
    lib: Any = jaxport if exporter == "jaxport" else jax.export
    export = jaxport.export if exporter == "jaxport" else jax.export.export
    return export(jax.jit(inner_f))(jax.ShapeDtypeStruct(lib.symbolic_shape("b, 3"), F32))


def outer_f(call_inner: Callable[..., Any]) -> Callable[..., Any]:
    """A function of ``x`` of shape ``(c + 1, 3)`` that calls the inner function on ``x[1:]``."""
    def outer(x: Any) -> Any:
        y, s = call_inner(x[1:])
        return y.sum(axis=0) + s.sum(), x.shape[0] * jnp.ones_like(s), y

    return outer


@functools.cache
def outer() -> Any:
    c, = jaxport.symbolic_shape("c")
    return jaxport.export(jax.jit(outer_f(inner().call)))(jax.ShapeDtypeStruct((c + 1, 3), F32))


SHAPES = [2, 4, 7]


# --------------------------------------------------------------------------
# Called from another export
# --------------------------------------------------------------------------


def test_the_callees_outputs_are_expressions_over_the_callers_variables() -> None:
    assert [str(a) for a in outer().in_avals] == ["float32[c + 1,3]"]
    assert [str(a) for a in outer().out_avals] == ["float32[3]", "float32[c]", "float32[c,3]"]


def test_the_caller_reads_as_jax_exports_caller_of_jax_exports_callee() -> None:
    c, = jax.export.symbolic_shape("c")
    theirs = jax.export.export(jax.jit(outer_f(inner("jax").call)))(jax.ShapeDtypeStruct((c + 1, 3), F32))
    assert [str(a) for a in outer().out_avals] == [str(a) for a in theirs.out_avals]


@pytest.mark.parametrize("mode", ["eagerly", "under_jit"])
def test_an_export_that_calls_a_polymorphic_export_runs_at_every_shape(mode: str) -> None:
    call = outer().call if mode == "eagerly" else jax.jit(outer().call)
    for n in SHAPES:
        assert_same_results(call(rows(n, seed=n)), jax.jit(outer_f(inner_f))(rows(n, seed=n)))


def test_three_levels_of_polymorphic_exports_run_at_every_shape() -> None:
    def doubled(x: Any) -> Any:
        return jnp.concatenate([x, x])

    b, = jaxport.symbolic_shape("b")
    level1 = jaxport.export(jax.jit(doubled))(jax.ShapeDtypeStruct((b,), F32))
    level2 = jaxport.export(jax.jit(lambda x: level1.call(level1.call(x))))(jax.ShapeDtypeStruct((b,), F32))
    level3 = jaxport.export(jax.jit(lambda x: level2.call(x) * 2.0 + level1.call(x).sum()))(
        jax.ShapeDtypeStruct((2 * b,), F32))
    assert [str(a) for a in level3.out_avals] == ["float32[8*b]"]
    for n in (1, 2, 3):
        x = np.arange(2 * n, dtype=np.float32)
        expected = np.tile(x, 4) * 2.0 + 2.0 * x.sum()
        np.testing.assert_allclose(level3.call(x), expected)
        np.testing.assert_allclose(jax.jit(level3.call)(x), expected)


def test_the_caller_rejects_a_call_that_violates_its_own_specification() -> None:
    with pytest.raises(ShapeAssertionError, match=r"Expected value >= 1 for dimension variable 'c'.*"
                                                  r"'c' = 0 from specification 'c \+ 1'"):
        outer().call(rows(1))


def constrained_inner(lib: Any, export: Callable[..., Any]) -> Any:
    b, = lib.symbolic_shape("b", constraints=("b >= 4",))
    return export(jax.jit(lambda x: x[:4] * 2.0))(jax.ShapeDtypeStruct((b,), F32))


def test_a_callee_constraint_the_callers_shapes_may_violate_fails_the_export_as_in_jax() -> None:
    def attempt(lib: Any, export: Callable[..., Any]) -> str:
        callee = constrained_inner(lib, export)
        c, = lib.symbolic_shape("c")
        with pytest.raises(ValueError) as info:
            export(jax.jit(callee.call))(jax.ShapeDtypeStruct((c,), F32))
        return str(info.value)

    ours = attempt(jaxport, jaxport.export)
    assert ours.startswith("Input shapes do not match the symbolic shape constraint b >= 4. Expected 'b - 4' "
                           "to be greater or equal to 0, but found c - 4.")
    assert ours == attempt(jax.export, jax.export.export)


def test_a_callee_constraint_implied_by_the_callers_constraint_is_accepted() -> None:
    callee = constrained_inner(jaxport, jaxport.export)
    c, = jaxport.symbolic_shape("c", constraints=("c >= 5",))
    caller = jaxport.export(jax.jit(lambda x: callee.call(x[1:])))(jax.ShapeDtypeStruct((c,), F32))
    assert [str(a) for a in caller.out_avals] == ["float32[4]"]
    for n in (5, 6, 9):
        x = np.arange(n, dtype=np.float32)
        np.testing.assert_allclose(caller.call(x), x[1:5] * 2.0)


def test_a_callee_divisibility_the_callers_shapes_may_violate_fails_the_export_as_in_jax() -> None:
    def attempt(lib: Any, export: Callable[..., Any]) -> str:
        b, = lib.symbolic_shape("2*b")
        callee = export(jax.jit(lambda x: x * 2.0))(jax.ShapeDtypeStruct((b,), F32))
        c, = lib.symbolic_shape("c")
        with pytest.raises(ValueError) as info:
            export(jax.jit(callee.call))(jax.ShapeDtypeStruct((c,), F32))
        return str(info.value)

    ours = attempt(jaxport, jaxport.export)
    assert "Division had remainder mod(c, 2) when computing the value of 'b'" in ours
    assert ours == attempt(jax.export, jax.export.export)


# --------------------------------------------------------------------------
# Through bytes
# --------------------------------------------------------------------------

DESERIALIZERS: dict[str, Callable[[Any], Any]] = {
    "jaxport": jaxport.deserialize, "jax.export": jax.export.deserialize}


@functools.cache
def round_trip(exporter: str, deserializer: str) -> Any:
    return DESERIALIZERS[deserializer](inner(exporter).serialize())


ROUND_TRIPS = [("jaxport", "jaxport"), ("jaxport", "jax.export"), ("jax", "jaxport")]


@pytest.mark.parametrize(("exporter", "deserializer"), ROUND_TRIPS)
def test_a_deserialized_polymorphic_artifact_keeps_its_signature(exporter: str, deserializer: str) -> None:
    again = round_trip(exporter, deserializer)
    assert [str(a) for a in again.in_avals] == ["float32[b,3]"]
    assert [str(a) for a in again.out_avals] == ["float32[b,3]", "float32[b]"]


@pytest.mark.parametrize(("exporter", "deserializer"), ROUND_TRIPS)
@pytest.mark.parametrize("mode", ["eagerly", "under_jit"])
def test_a_deserialized_polymorphic_artifact_runs_at_every_shape(exporter: str, deserializer: str,
                                                                 mode: str) -> None:
    again = round_trip(exporter, deserializer)
    call = again.call if mode == "eagerly" else jax.jit(again.call)
    for n in SHAPES:
        assert_same_results(call(rows(n, seed=n)), inner_f(rows(n, seed=n)))


@pytest.mark.parametrize("deserializer", ["jaxport", "jax.export"])
def test_a_deserialized_artifact_called_from_a_jaxport_export_runs_at_every_shape(deserializer: str) -> None:
    again = round_trip("jaxport", deserializer)
    c, = jaxport.symbolic_shape("c")
    caller = jaxport.export(jax.jit(outer_f(again.call)))(jax.ShapeDtypeStruct((c + 1, 3), F32))
    assert [str(a) for a in caller.out_avals] == ["float32[3]", "float32[c]", "float32[c,3]"]
    for n in SHAPES:
        assert_same_results(caller.call(rows(n, seed=n)), jax.jit(outer_f(inner_f))(rows(n, seed=n)))


def test_a_nested_export_survives_a_trip_through_jax_export() -> None:
    again = jax.export.deserialize(outer().serialize())
    assert [str(a) for a in again.out_avals] == ["float32[3]", "float32[c]", "float32[c,3]"]
    for n in SHAPES:
        assert_same_results(again.call(rows(n, seed=n)), jax.jit(outer_f(inner_f))(rows(n, seed=n)))


def test_a_jaxport_artifact_called_from_a_jax_export_with_symbolic_shapes_runs() -> None:
    c, = jax.export.symbolic_shape("c")
    caller = jax.export.export(jax.jit(outer_f(inner().call)))(jax.ShapeDtypeStruct((c + 1, 3), F32))
    for n in SHAPES:
        assert_same_results(caller.call(rows(n, seed=n)), jax.jit(outer_f(inner_f))(rows(n, seed=n)))


def test_a_constraint_that_jax_exports_own_dimensions_cannot_prove_is_refused() -> None:
    b, = jaxport.symbolic_shape("b", constraints=("b >= 16",))
    needs_16 = jaxport.export(jax.jit(lambda x: x * 2))(jax.ShapeDtypeStruct((b,), F32))
    c, = jax.export.symbolic_shape("c")
    with pytest.raises(ValueError, match=r"Input shapes do not match the symbolic shape constraint b >= 16"
                                         r".*'b' = c from specification 'b'"):
        jax.export.export(jax.jit(needs_16.call))(jax.ShapeDtypeStruct((c,), F32))
