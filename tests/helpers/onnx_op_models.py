"""The models of issue 28's ONNX tests: a CNN, a scan RNN, branches, sorting, a scatter, float16 and bfloat16 MLPs.

Each ``save_*`` exports its function with a symbolic batch ``b`` (one model
for every size), writes a bundle with its weights, and returns the bundle's
path, the weights and the plain function to compare against under ``jax.jit``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

import jaxport

Saved = tuple[Path, dict[str, Any], Callable[..., Any]]


def _normal(rng: np.random.Generator, *shape: int, scale: float = 0.3, dtype: Any = np.float32) -> np.ndarray:
    return (rng.normal(size=shape) * scale).astype(dtype)


def _save(path: Path, function: Callable[..., Any], params: dict[str, Any], *args: jax.ShapeDtypeStruct) -> Saved:
    specs = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), params)
    exported = jaxport.export(jax.jit(function))(specs, *args)
    jaxport.save_bundle(path, {"predict": exported}, params)
    return path, params, function


def cnn(params: dict[str, Any], x: jax.Array) -> jax.Array:
    """Strided, dilated and grouped convolutions, a max and an average pool, a dense head (NHWC)."""
    numbers = ("NHWC", "HWIO", "NHWC")
    x = jax.nn.relu(lax.conv_general_dilated(x, params["c1"], (2, 2), "SAME", dimension_numbers=numbers))
    x = jax.nn.relu(lax.conv_general_dilated(x, params["c2"], (1, 1), "SAME", rhs_dilation=(2, 2),
                                             dimension_numbers=numbers, feature_group_count=2))
    x = lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    x = jax.nn.relu(lax.conv_general_dilated(x, params["c3"], (1, 1), "VALID", dimension_numbers=numbers))
    x = lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 1, 1, 1), "SAME") / 4.0
    result: jax.Array = x.mean(axis=(1, 2)) @ params["head"]
    return result


def save_cnn(path: Path) -> Saved:
    rng = np.random.default_rng(0)
    params = {"c1": _normal(rng, 3, 3, 3, 8), "c2": _normal(rng, 3, 3, 4, 8), "c3": _normal(rng, 1, 1, 8, 6),
              "head": _normal(rng, 6, 10)}
    b, = jaxport.symbolic_shape("b")
    return _save(path, cnn, params, jax.ShapeDtypeStruct((b, 16, 16, 3), jnp.float32))


def rnn(params: dict[str, Any], xs: jax.Array) -> tuple[jax.Array, jax.Array]:
    """An Elman RNN over time with ``lax.scan``: the last state and every step's output."""
    def step(h: jax.Array, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        h = jnp.tanh(x @ params["wx"] + h @ params["wh"] + params["b"])
        return h, h @ params["wo"]
    h0 = jnp.zeros((xs.shape[0], params["wh"].shape[0]), xs.dtype)
    last, ys = lax.scan(step, h0, jnp.swapaxes(xs, 0, 1))
    return last, jnp.swapaxes(ys, 0, 1)


def save_rnn(path: Path) -> Saved:
    rng = np.random.default_rng(1)
    params = {"wx": _normal(rng, 5, 12), "wh": _normal(rng, 12, 12), "b": _normal(rng, 12), "wo": _normal(rng, 12, 3)}
    b, = jaxport.symbolic_shape("b")
    return _save(path, rnn, params, jax.ShapeDtypeStruct((b, 7, 5), jnp.float32))


def branches(params: dict[str, Any], which: jax.Array, x: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``lax.switch`` on an index (out of range clamps) and ``lax.cond`` on a data-dependent predicate."""
    switched = lax.switch(which, [lambda v: v @ params["w"], lambda v: jnp.sin(v) @ params["w"],
                                  lambda v: -(v @ params["w"]) * 2.0], x)
    conditioned = lax.cond(x.sum() > 0, lambda v: jnp.exp(v).sum(axis=1), lambda v: v.max(axis=1), x)
    return switched, conditioned


def save_branches(path: Path) -> Saved:
    params = {"w": _normal(np.random.default_rng(2), 4, 3)}
    b, = jaxport.symbolic_shape("b")
    return _save(path, branches, params, jax.ShapeDtypeStruct((), jnp.int32), jax.ShapeDtypeStruct((b, 4), jnp.float32))


def sorting(params: dict[str, Any], x: jax.Array) -> tuple[jax.Array, ...]:
    """``jnp.sort``, ``jnp.argsort`` and ``lax.top_k`` of scores."""
    scores = x @ params["w"]
    values, indices = lax.top_k(scores, 3)
    return jnp.sort(scores, axis=-1), jnp.argsort(scores, axis=0), values, indices


def save_sorting(path: Path) -> Saved:
    params = {"w": _normal(np.random.default_rng(3), 6, 10)}
    b, = jaxport.symbolic_shape("b")
    return _save(path, sorting, params, jax.ShapeDtypeStruct((b, 6), jnp.float32))


def histogram(params: dict[str, Any], idx: jax.Array, v: jax.Array) -> jax.Array:
    """``x.at[idx].add(v)``: weighted counts into bins (indices out of range dropped)."""
    result: jax.Array = params["base"].at[idx].add(v)
    return result


def save_histogram(path: Path) -> Saved:
    params = {"base": _normal(np.random.default_rng(4), 8)}
    b, = jaxport.symbolic_shape("b")
    return _save(path, histogram, params, jax.ShapeDtypeStruct((b,), jnp.int32),
                 jax.ShapeDtypeStruct((b,), jnp.float32))


def mlp(params: dict[str, Any], x: jax.Array) -> jax.Array:
    """Three dense layers, GELU between them, in the weights' dtype."""
    for i in range(3):
        x = x @ params[f"w{i}"] + params[f"b{i}"]
        x = jax.nn.gelu(x) if i < 2 else x
    return x


def save_mlp(path: Path, dtype: Any) -> Saved:
    rng = np.random.default_rng(5)
    sizes = [16, 32, 32, 4]
    params = {name: value for i, (m, n) in enumerate(zip(sizes, sizes[1:]))
              for name, value in ((f"w{i}", _normal(rng, m, n, dtype=dtype)), (f"b{i}", _normal(rng, n, dtype=dtype)))}
    b, = jaxport.symbolic_shape("b")
    return _save(path, mlp, params, jax.ShapeDtypeStruct((b, 16), dtype))
