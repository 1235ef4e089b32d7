"""jax.vmap of exported functions: vectorised in process, a sequential map after loading."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import jaxport

RNG = np.random.default_rng(1)


def arr(*shape: int) -> Any:
    return RNG.normal(size=shape).astype(np.float32)


# name, function, one example's arguments, in_axes, batch size
CASES: list[tuple[str, Callable[..., Any], tuple[Any, ...], tuple[Any, ...]]] = [
    ("elementwise", lambda x: jnp.sin(x) * 2, (arr(3),), (0,)),
    ("centered_matmul", lambda x, w: jnp.tanh(x @ w) - jnp.mean(x), (arr(2, 3), arr(3, 4)), (0, None)),
    ("weights_batched", lambda x, w: x @ w, (arr(2, 3), arr(3, 4)), (None, 0)),
    ("axis_1", lambda x: jnp.cumsum(x) + x[0], (arr(5),), (1,)),
    ("both_axes", lambda x, y: jnp.outer(x, y).sum(0), (arr(3), arr(4)), (0, 1)),
    ("pytree", lambda p, x: {"y": p["a"] * x, "z": jnp.sum(p["b"])}, ({"a": arr(3), "b": arr(2)}, arr(3)),
     ({"a": 0, "b": None}, 0)),
    ("scan", lambda xs: lax.scan(lambda c, x: (c + x, c * x), 0.0, xs)[1], (arr(6),), (0,)),
    ("int_output", lambda x: (jnp.argmax(x), x.max()), (arr(5),), (0,)),
]
BATCH = 4


def batched_args(args: tuple[Any, ...], in_axes: tuple[Any, ...]) -> tuple[Any, ...]:
    def stack(a: Any, axis: Any) -> Any:
        if axis is None:
            return a
        return np.stack([np.asarray(a) * (i + 1) for i in range(BATCH)], axis=axis)
    return tuple(jax.tree_util.tree_map(stack, a, ax) if isinstance(ax, dict) else
                 jax.tree_util.tree_map(lambda leaf, ax=ax: stack(leaf, ax), a)
                 for a, ax in zip(args, in_axes))


def assert_close(got: Any, want: Any) -> None:
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want), strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name, fun, args, in_axes", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("where", ["in_process", "deserialized"])
def test_vmap_of_an_exported_function_matches_vmap_of_the_original(
        name: str, fun: Callable[..., Any], args: tuple[Any, ...], in_axes: tuple[Any, ...], where: str) -> None:
    exp = jaxport.export(fun)(*args)
    if where == "deserialized":
        exp = jaxport.deserialize(exp.serialize())
    batch = batched_args(args, in_axes)
    want = jax.vmap(fun, in_axes=in_axes)(*batch)
    assert_close(jax.vmap(exp.call, in_axes=in_axes)(*batch), want)
    assert_close(jax.jit(jax.vmap(exp.call, in_axes=in_axes))(*batch), want)


def test_in_process_vmap_is_vectorised_and_loaded_vmap_is_a_map() -> None:
    fun, args, in_axes = CASES[1][1], CASES[1][2], CASES[1][3]
    exp = jaxport.export(fun)(*args)
    batch = batched_args(args, in_axes)
    vectorised = str(jax.make_jaxpr(jax.vmap(exp.call, in_axes=in_axes))(*batch))
    assert "vmap_<lambda>" in vectorised and "scan" not in vectorised
    loaded = jaxport.deserialize(exp.serialize())
    sequential = str(jax.make_jaxpr(jax.vmap(loaded.call, in_axes=in_axes))(*batch))
    assert "scan" in sequential


@pytest.mark.parametrize("where", ["in_process", "deserialized"])
def test_vmap_composes_with_grad(where: str) -> None:
    fun, args, in_axes = CASES[1][1], CASES[1][2], CASES[1][3]
    exp = jaxport.export(fun)(*args)
    if where == "deserialized":
        exp = jaxport.deserialize(exp.serialize(vjp_order=1))
    x = batched_args(args, in_axes)[0]
    w = args[1]
    got = jax.grad(lambda w: jax.vmap(exp.call, in_axes=(0, None))(x, w).sum())(w)
    want = jax.grad(lambda w: jax.vmap(fun, in_axes=(0, None))(x, w).sum())(w)
    assert_close(got, want)
    per_example = jax.vmap(jax.grad(lambda x, w: exp.call(x, w).sum()), in_axes=(0, None))(x, w)
    assert_close(per_example, jax.vmap(jax.grad(lambda x, w: fun(x, w).sum()), in_axes=(0, None))(x, w))


def test_jax_exports_artifacts_vmap_through_jaxport() -> None:
    fun, args = CASES[0][1], CASES[0][2]
    theirs = jax.export.export(jax.jit(fun))(*args)
    ours = jaxport.deserialize(theirs.serialize())
    batch = batched_args(args, (0,))
    assert_close(jax.vmap(ours.call)(*batch), jax.vmap(fun)(*batch))
