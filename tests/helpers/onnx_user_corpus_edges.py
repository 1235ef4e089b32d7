"""The user corpus's harder corners: symbolic (batch) dimensions, narrow and unsigned types, empty arrays,
indexing edges and the numerics of common model pieces."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

import jaxport
from .onnx_corpus import Case
from .onnx_user_corpus import EDGES, F32, I32, U32, arrays, case, ints

b, t = jaxport.symbolic_shape("b, t")
X = arrays(4, 6, seed=81)
V = arrays(9, seed=82)
H = EDGES.astype(np.float16)
U8 = ints(0, 256, 3, 5, seed=83, dtype=np.uint8)
UBIG = np.array([0, 1, 2**31, 2**32 - 1, 12345, 2**16], U32)


def symbolic(name: str, function: Any, specs: list[jax.ShapeDtypeStruct], *arg_sets: list[np.ndarray],
             tolerance: float | None = None) -> Case:
    """A case exported with symbolic dimensions, run at several sizes."""
    return Case(name, function, specs, [list(a) for a in arg_sets], tolerance=tolerance)


def spec(shape: tuple[Any, ...], dtype: Any = F32) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, dtype)


CASES: list[Case] = [
    # symbolic dimensions
    symbolic("softmax over a symbolic batch", lambda x: jax.nn.softmax(x, -1), [spec((b, 6))], [X], [X[:1]],
             [np.zeros((0, 6), F32)]),
    symbolic("mean and var over a symbolic length", lambda x: (x.mean(1), x.var(1)), [spec((3, t))],
             [arrays(3, 5, seed=84)], [arrays(3, 1, seed=85)]),
    symbolic("cumsum and sort over a symbolic length", lambda x: (jnp.cumsum(x), jnp.sort(x)), [spec((t,))],
             [V], [V[:2]], [EDGES]),
    symbolic("matmul with a symbolic batch", lambda x, w: x @ w, [spec((b, 6)), spec((6, 3))],
             [X, arrays(6, 3, seed=86)], [X[:1], arrays(6, 3, seed=87)]),
    symbolic("concatenate and pad symbolic", lambda x: jnp.pad(jnp.concatenate([x, x[::-1]]), (2, 1)),
             [spec((t,))], [V], [V[:1]]),
    symbolic("argmax over a symbolic batch", lambda x: jnp.argmax(x, axis=0), [spec((b, 6))], [X], [X[:1]]),
    symbolic("reshape a symbolic batch", lambda x: x.reshape(x.shape[0] * 2, 3).sum(-1), [spec((b, 6))], [X], [X[:2]]),
    symbolic("where with a symbolic mask", lambda x, m: jnp.where(m, x, -jnp.inf).max(-1),
             [spec((b, 6)), spec((b, 6), np.bool_)], [X, X > 0], [X[:1], X[:1] > -9]),
    symbolic("one_hot of a symbolic batch", lambda i: jax.nn.one_hot(i, 4), [spec((b,), I32)],
             [np.array([0, 3, -1, 9], I32)], [np.array([2], I32)]),
    symbolic("take with symbolic indices", lambda x, i: jnp.take(x, i, axis=0), [spec((9,)), spec((b,), I32)],
             [V, np.array([0, 8, -1, 20], I32)], [V, np.zeros(0, I32)]),
    symbolic("layer norm on a symbolic batch", lambda x: jax.nn.standardize(x, axis=-1) * 2 + 1, [spec((b, 6))],
             [X], [X[:3]]),
    symbolic("scan over a symbolic length", lambda x: lax.scan(lambda c, v: (c * 0.5 + v, c), 0.0, x)[1],
             [spec((t,))], [V], [V[:1]]),
    symbolic("vmapped scatter over a symbolic batch", jax.vmap(lambda x, i: x.at[i].add(1.0)),
             [spec((b, 5)), spec((b,), I32)], [X[:, :5], np.array([0, 4, 9, -1], I32)], [X[:1, :5], np.array([2], I32)]),
    symbolic("while_loop over a symbolic length", lambda x: lax.while_loop(
        lambda s: s[1] < s[0].shape[0], lambda s: (s[0].at[s[1]].multiply(2.0), s[1] + 1), (x, 0))[0],
             [spec((t,))], [V], [V[:1]]),
    symbolic("conv over a symbolic batch", lambda x, w: lax.conv(x, w, (1, 1), "SAME"),
             [spec((b, 2, 5, 5)), spec((3, 2, 3, 3))], [arrays(2, 2, 5, 5, seed=98), arrays(3, 2, 3, 3, seed=99)],
             [arrays(1, 2, 5, 5, seed=100), arrays(3, 2, 3, 3, seed=101)]),
    symbolic("max pool over a symbolic batch", lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2),
                                                                           (1, 2, 2), "SAME"),
             [spec((b, 5, 5))], [arrays(2, 5, 5, seed=102)], [arrays(1, 5, 5, seed=103)]),
    symbolic("top_k over a symbolic batch", lambda x: lax.top_k(x, 2), [spec((b, 6))], [X], [X[:1]]),
    symbolic("cummax int reverse over a symbolic length", lambda x: lax.cummax(x, reverse=True), [spec((t,), I32)],
             [ints(-9, 9, 7, seed=104)], [ints(-9, 9, 1, seed=105)]),
    # narrow and unsigned types
    case("float16 transcendental", lambda x: (jnp.tanh(x), jnp.log1p(jnp.abs(x)), jax.nn.sigmoid(x)), H),
    case("float16 reductions", lambda x: (x.sum(), x.max(), jnp.argmax(x), jnp.cumsum(x)),
         np.array([1.5, -2.0, 65504.0, 0.001, 3.0], np.float16)),
    case("bfloat16 matmul and softmax", lambda x, w: jax.nn.softmax(x.astype(jnp.bfloat16) @ w.astype(jnp.bfloat16)),
         X, arrays(6, 3, seed=88)),
    case("bfloat16 edges", lambda x: (x.astype(jnp.bfloat16) * 3).astype(jnp.float32), EDGES),
    case("uint8 arithmetic wraps", lambda x, y: (x + y, x - y, x * y, x // jnp.maximum(y, 1), x >> 3, ~x), U8,
         U8[::-1].copy()),
    case("uint8 mean and sum", lambda x: (x.mean(), x.sum(axis=0), x.max(1)), U8),
    case("uint32 compare and wrap", lambda x: (x > jnp.uint32(2**31), x + x, x // 7, x.astype(jnp.float32)), UBIG),
    case("uint32 to int32 and back", lambda x: (x.astype(jnp.int32), x.astype(jnp.int32).astype(jnp.uint32)), UBIG),
    case("int8 to uint8 and int16", lambda x: (x.astype(jnp.uint8), x.astype(jnp.int16) * 300),
         np.array([-128, -1, 0, 1, 127], np.int8)),
    case("bool arithmetic", lambda p: (p.sum(), p.astype(jnp.float32).mean(), jnp.cumsum(p), p * 3),
         X > 0),
    case("bool sort and argsort", lambda p: (jnp.sort(p), jnp.argsort(p, stable=True)), V > 0),
    # empty arrays
    case("empty reductions", lambda x: (x.sum(0), x.max(0, initial=0.0), x.mean(1), jnp.argmax(x, 1)),
         np.zeros((0, 3), F32)),
    case("empty matmul and concat", lambda x, y: (x @ y, jnp.concatenate([x.T, x.T], 1)), np.zeros((2, 0), F32),
         np.zeros((0, 3), F32)),
    case("empty sort, cumsum and where", lambda x: (jnp.sort(x), jnp.cumsum(x), jnp.where(x > 0, x, 1)),
         np.zeros(0, F32)),
    # indexing
    case("negative and out-of-range indices", lambda x, i: (x[i], x[-1], x.at[i].get(mode="clip")), V,
         np.array([-1, -9, 0, 8, -10, 100], I32)),
    case("scatter with repeated indices", lambda x, i, v: (x.at[i].add(v), x.at[i].max(v), x.at[i].min(v)), V,
         np.array([1, 1, 1, 4, 4], I32), arrays(5, seed=89)),
    case("scatter out of range dropped", lambda x, i, v: x.at[i].set(v, mode="drop"), V,
         np.array([0, 9, -20, 3, 100], I32), arrays(5, seed=90)),
    case("2-D gather and scatter", lambda x, i, j: (x[i, j], x.at[i, j].multiply(2.0)), X,
         np.array([0, 3, 1], I32), np.array([5, 0, 2], I32)),
    case("boolean index by where", lambda x: jnp.where(x > 0, size=5, fill_value=-1)[0], V),
    case("dynamic_update_slice clamped", lambda x, u, s: lax.dynamic_update_slice(x, u, (s,)), V,
         arrays(3, seed=91), np.array(8, I32)),
    case("strided and reversed slices", lambda x: (x[::3, ::-2], x[-1:0:-1], x[..., None, 1]), X),
    # pieces of models
    case("attention scores with a causal mask", lambda q, k: jax.nn.softmax(jnp.where(
        jnp.tril(jnp.ones((5, 5), bool)), q @ k.T / jnp.sqrt(8.0), -1e9)), arrays(5, 8, seed=92),
         arrays(5, 8, seed=93)),
    case("RMS norm", lambda x, g: x * lax.rsqrt((x * x).mean(-1, keepdims=True) + 1e-6) * g, X, arrays(6, seed=94)),
    case("rotary embedding", lambda x: (lambda c, s: jnp.concatenate(
        [x[:, :3] * c - x[:, 3:] * s, x[:, :3] * s + x[:, 3:] * c], -1))(
        jnp.cos(jnp.arange(4.0)[:, None] * jnp.arange(3.0)), jnp.sin(jnp.arange(4.0)[:, None] * jnp.arange(3.0))), X),
    case("softmax cross entropy with integer labels", lambda logits, y: -jnp.take_along_axis(
        jax.nn.log_softmax(logits), y[:, None], 1).mean(), X, np.array([0, 5, 2, 1], I32)),
    case("top-k sampling mask", lambda x: jnp.where(x >= lax.top_k(x, 2)[0][..., -1:], x, -jnp.inf), X),
    case("logsumexp with -inf rows", lambda x: jax.nn.logsumexp(x, axis=1),
         np.array([[-np.inf, -np.inf], [0.0, -np.inf], [np.inf, 1.0], [np.nan, 0.0]], F32)),
    case("gradient of a softmax cross entropy", jax.grad(lambda w, x: -jax.nn.log_softmax(x @ w)[:, 0].mean()),
         arrays(6, 3, seed=95), X),
    case("clipped gradient norm", lambda g: g * jnp.minimum(1.0, 1.0 / (jnp.linalg.norm(g) + 1e-6)), X),
    case("Adam step", lambda p, g, m, v: (lambda m2, v2: p - 1e-3 * m2 / (jnp.sqrt(v2) + 1e-8))(
        0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g), X, arrays(4, 6, seed=96), X * 0.1, X * X),
    case("histogram of a batch by comparison", lambda x: (x[:, None] > jnp.linspace(-2, 2, 5)).sum(0), V),
    case("pairwise distances", lambda a: jnp.sqrt(jnp.maximum(
        ((a[:, None, :] - a[None, :, :]) ** 2).sum(-1), 0.0)), X),
    case("k-means assignment", lambda x, c: jnp.argmin(((x[:, None] - c[None]) ** 2).sum(-1), 1), X,
         arrays(3, 6, seed=97)),
    case("polynomial features", lambda x: jnp.stack([x ** k for k in range(4)], -1), V),
    # narrow integers (ONNX Runtime lacks many of their kernels)
    case("int8 arithmetic wraps", lambda x, y: (x + y, x * y, x - y, -x, jnp.abs(x), x // jnp.where(y == 0, 1, y)),
         np.array([-128, 127, 100, -1, 0, 64], np.int8), np.array([-1, 1, 100, -128, 0, 2], np.int8)),
    case("int16 and uint16 reductions and sorts", lambda a, u: (a.sum(), a.max(), jnp.sort(a), jnp.cumsum(u),
                                                               u.min(), jnp.argmax(u)),
         ints(-30000, 30000, 9, seed=106, dtype=np.int16), ints(0, 65535, 7, seed=107, dtype=np.uint16)),
    case("int8 bitwise and shifts", lambda x, s: (x & 0x0F, x | s, x ^ s, x << (s % 8), x >> (s % 8),
                                                 lax.shift_right_logical(x, s % 8), lax.population_count(x)),
         np.array([-128, 127, 100, -1, 0, 64], np.int8), np.array([1, 7, 3, 0, 9, 2], np.int8)),
    case("uint8 comparisons, clip and where", lambda x: (jnp.clip(x, 10, 200), x > 128, jnp.where(x > 100, x, 0),
                                                        jnp.maximum(x, 50)), U8),
    case("int16 matmul and dot", lambda a, b: (a @ b, jnp.dot(a[0], b[:, 0])),
         ints(-100, 100, 3, 4, seed=108, dtype=np.int16), ints(-100, 100, 4, 2, seed=109, dtype=np.int16)),
    case("uint32 and int8 gather, scatter and top_k", lambda x, i: (x[i], x.at[i].add(x[i]), lax.top_k(x, 3)),
         UBIG, np.array([5, 0, 3], I32)),
    case("mixed promotion int8 + float16 + int32", lambda a, h, i: (a + h, a * i, h * i),
         np.array([-128, 127, 5], np.int8), np.array([0.5, -1.5, 2.0], np.float16), np.array([3, -4, 70000], I32)),
]
