"""The ONNX operation corpus: every case converted, run on ONNX Runtime, compared with ``jax.jit``.

One ONNX Runtime session per case, through jaxport's runtime adapter (which
imports no JAX: :func:`test_the_runtime_adapter_runs_a_model_in_a_process_without_jax`).
Every case either matches JAX or is refused with the typed error naming the
operation the table says: no wrong result, no crash, no untyped error.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("onnx", reason="the ONNX tests need the jaxport[onnx] extra (onnx)")
pytest.importorskip("onnxruntime", reason="the ONNX tests need the jaxport[onnx] extra (onnxruntime)")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

import jaxport  # noqa: E402
from jaxport.adapters.onnx.runtime import OnnxRuntimeModel  # noqa: E402
from tests.helpers.onnx_corpus import Case, check_case, expected, save, spec, to_onnx  # noqa: E402
from tests.helpers.web_batch import WebBatch, module_batch  # noqa: E402

b, t = jaxport.symbolic_shape("b, t")
rng = np.random.default_rng(0)
F32, I32 = np.float32, np.int32


def normal(*shape: int, dtype: Any = F32) -> np.ndarray:
    return rng.normal(size=shape).astype(dtype)


def ints(low: int, high: int, *shape: int, dtype: Any = I32) -> np.ndarray:
    return rng.integers(low, high, size=shape).astype(dtype)


def conv(x: jax.Array, w: jax.Array, **kw: Any) -> jax.Array:
    result: jax.Array = lax.conv_general_dilated(x, w, **kw)
    return result


def _max_pool(x: jax.Array, window: tuple[int, ...], strides: tuple[int, ...], padding: Any) -> jax.Array:
    result: jax.Array = lax.reduce_window(x, -jnp.inf, lax.max, window, strides, padding)
    return result


CASES: list[Case] = [
    # pad, reverse
    Case("pad edges and interior", lambda x: lax.pad(x, 0.5, [(1, 2, 1), (0, 1, 2)]), [spec((3, 4))],
         [[normal(3, 4)]]),
    Case("pad negative", lambda x: lax.pad(x, 0.0, [(-1, 2, 0), (2, -3, 1)]), [spec((4, 5))], [[normal(4, 5)]]),
    Case("pad int8 symbolic", lambda x: lax.pad(x, jnp.int8(7), [(0, 0, 0), (1, -1, 1)]),
         [spec((b, 4), np.int8)], [[ints(-9, 9, 2, 4, dtype=np.int8)], [ints(-9, 9, 5, 4, dtype=np.int8)]]),
    Case("reverse", lambda x: lax.rev(x, (0, 2)), [spec((b, 3, 4))], [[normal(2, 3, 4)], [normal(1, 3, 4)]]),
    # convolution
    Case("conv NCHW strided padded", lambda x, w: conv(x, w, window_strides=(2, 1), padding=((1, 1), (2, 0))),
         [spec((2, 3, 9, 8)), spec((4, 3, 3, 3))], [[normal(2, 3, 9, 8), normal(4, 3, 3, 3)]]),
    Case("conv NHWC dilated grouped symbolic",
         lambda x, w: conv(x, w, window_strides=(1, 1), padding="SAME", rhs_dilation=(2, 2),
                           dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=2),
         [spec((b, 8, 8, 4)), spec((3, 3, 2, 6))], [[normal(2, 8, 8, 4), normal(3, 3, 2, 6)],
                                                    [normal(1, 8, 8, 4), normal(3, 3, 2, 6)]]),
    Case("conv transpose (lhs dilation) 1-D", lambda x, w: conv(x, w, window_strides=(1,), padding=((2, 2),),
                                                                 lhs_dilation=(2,)),
         [spec((2, 3, 7)), spec((5, 3, 3))], [[normal(2, 3, 7), normal(5, 3, 3)]]),
    Case("conv negative padding 3-D", lambda x, w: conv(x, w, window_strides=(1, 2, 1),
                                                        padding=((-1, 0), (1, 1), (0, 0))),
         [spec((1, 2, 5, 6, 4)), spec((3, 2, 2, 3, 2))], [[normal(1, 2, 5, 6, 4), normal(3, 2, 2, 3, 2)]]),
    Case("conv batch groups (grouped conv weight gradient)",
         lambda x, w: jax.grad(lambda w: jnp.sum(conv(x, w, window_strides=(1, 1), padding="VALID",
                                                      feature_group_count=2) ** 2))(w),
         [spec((2, 4, 6, 6)), spec((6, 2, 3, 3))], [[normal(2, 4, 6, 6), normal(6, 2, 3, 3)]]),
    Case("conv float16", lambda x, w: conv(x, w, window_strides=(1, 1), padding="SAME"),
         [spec((1, 2, 5, 5), np.float16), spec((3, 2, 3, 3), np.float16)],
         [[normal(1, 2, 5, 5, dtype=np.float16), normal(3, 2, 3, 3, dtype=np.float16)]]),
    Case("conv integer", lambda x, w: conv(x, w, window_strides=(1,), padding="VALID"),
         [spec((1, 1, 4), I32), spec((1, 1, 2), I32)], [[ints(-3, 3, 1, 1, 4), ints(-3, 3, 1, 1, 2)]]),
    # reduce_window
    Case("max pool strided padded", lambda x: _max_pool(x, (1, 1, 3, 3), (1, 1, 2, 2), "SAME"),
         [spec((b, 2, 7, 8))], [[normal(2, 2, 7, 8)], [normal(3, 2, 7, 8)]]),
    Case("pools and cummax with NaN", lambda x: (_max_pool(x, (2, 2), (1, 1), "VALID"),
                                                 lax.reduce_window(x, jnp.inf, lax.min, (2, 2), (2, 2), "SAME"),
                                                 lax.cummax(x, axis=1), lax.reduce_window(x, 0.0, lax.add, (1, 3),
                                                                                          (1, 1), "VALID")),
         [spec((4, 5))], [[np.where(rng.random((4, 5)) < 0.2, np.nan, normal(4, 5)).astype(F32)]]),
    Case("max pool dilated NHWC", lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 1, 1, 1),
                                                              "VALID", window_dilation=(1, 2, 2, 1)),
         [spec((2, 6, 6, 3))], [[normal(2, 6, 6, 3)]]),
    Case("min pool base dilation", lambda x: lax.reduce_window(x, jnp.inf, lax.min, (2, 2), (1, 1),
                                                               ((1, 0), (0, 1)), base_dilation=(2, 1)),
         [spec((4, 5))], [[normal(4, 5)]]),
    Case("sum pool", lambda x: lax.reduce_window(x, 0.0, lax.add, (1, 3, 3), (1, 2, 2), "SAME"),
         [spec((2, 7, 7))], [[normal(2, 7, 7)]]),
    Case("avg pool", lambda x: lax.reduce_window(x, 0.0, lax.add, (1, 1, 2, 2), (1, 1, 2, 2), "VALID") / 4.0,
         [spec((1, 3, 6, 6))], [[normal(1, 3, 6, 6)]]),
    Case("int max pool", lambda x: lax.reduce_window(x, jnp.iinfo(jnp.int32).min, lax.max, (2, 3), (1, 2),
                                                     "SAME"),
         [spec((5, 6), I32)], [[ints(-50, 50, 5, 6)]]),
    Case("cumsum float", lambda x: jnp.cumsum(x, axis=1), [spec((b, 6))], [[normal(3, 6)], [normal(1, 6)]]),
    Case("cumsum int", lambda x: jnp.cumsum(x), [spec((7,), I32)], [[ints(-100, 100, 7)]]),
    Case("cummax", lambda x: lax.cummax(x, axis=0), [spec((6, 2))], [[normal(6, 2)]]),
    Case("boolean windows (any, all)", lambda p: (
        lax.reduce_window(p, False, lax.bitwise_or, (1, 3), (1, 1), "SAME"),
        lax.reduce_window(p, True, lax.bitwise_and, (2, 2), (1, 2), "VALID"),
        lax.reduce_window(p, False, lax.bitwise_or, (1, 40), (1, 1), ((0, 0), (39, 0)))),
         [spec((3, 40), np.bool_)], [[rng.random((3, 40)) < 0.3]]),
    Case("cumulative along symbolic dimensions (dynamic_reduce_window)", lambda m, x: (
        jnp.cumsum(m, axis=1) - 1, lax.cummax(x, axis=0), jnp.cumsum(x, axis=1), lax.cumsum(m, axis=1, reverse=True)),
         [spec((b, t), I32), spec((b, t))], [[ints(0, 2, 2, 5), normal(2, 5)], [ints(0, 2, 3, 1), normal(3, 1)]]),
    Case("pools over symbolic spatial dimensions", lambda x: (
        lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 3), (1, 2, 1), "SAME"),
        lax.reduce_window(x, 0.0, lax.add, (1, 3, 2), (1, 1, 2), ((0, 0), (1, -1), (2, 0)))),
         [spec((2, b, t))], [[normal(2, 5, 6)], [normal(2, 1, 2)], [normal(2, 4, 3)]]),
    Case("cumprod int", lambda x: lax.cumprod(x, axis=0), [spec((5,), I32)], [[ints(-4, 4, 5)]]),
    Case("long cumulative int8 max, int sum, reverse, bool any", lambda x, i, p: (
        lax.cummax(x, axis=1), jnp.cumsum(i), lax.cumsum(i, reverse=True), lax.cummin(x, axis=1, reverse=True),
        jnp.logical_or.accumulate(p)),
         [spec((2, 300), np.int8), spec((200,), I32), spec((70,), np.bool_)],
         [[ints(-128, 127, 2, 300, dtype=np.int8), ints(-1000, 1000, 200), rng.random(70) < 0.1]]),
    # select_and_scatter: the gradient of a max pool
    Case("max pool gradient", lambda x: jax.grad(lambda x: jnp.sum(_max_pool(x, (1, 1, 2, 2), (1, 1, 2, 2),
                                                                             "VALID") ** 2))(x),
         [spec((2, 2, 6, 6))], [[normal(2, 2, 6, 6)]]),
    Case("max pool gradient padded overlapping", lambda x: jax.grad(
        lambda x: jnp.sum(jnp.sin(_max_pool(x, (3, 3), (2, 2), "SAME"))))(x), [spec((7, 6))], [[normal(7, 6)]]),
    # gather: general forms, out-of-range indices clamped
    Case("gather 2-D index vectors out of range", lambda x, i, j: x[i, j], [spec((5, 6)), spec((4,), I32),
                                                                           spec((4,), I32)],
         [[normal(5, 6), np.array([0, 4, 9, 2], I32), np.array([5, 7, 1, -30], I32)]]),
    Case("take_along_axis (batching dims)", lambda x, i: jnp.take_along_axis(x, i, axis=1),
         [spec((b, 5)), spec((b, 3), I32)], [[normal(2, 5), ints(0, 5, 2, 3)], [normal(4, 5), ints(0, 5, 4, 3)]]),
    Case("gather windows clamped", lambda x, i: lax.gather(
        x, i, lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0, 1)),
        slice_sizes=(1, 3), mode=lax.GatherScatterMode.CLIP),
         [spec((4, 6)), spec((3, 2), I32)], [[normal(4, 6), np.array([[1, 2], [7, 5], [-2, -9]], I32)]]),
    Case("dynamic_gather with symbolic slice sizes", lambda x, i, j: x[i, :, j],
         [spec((5, b, 3)), spec((4,), I32), spec((4,), I32)],
         [[normal(5, 2, 3), np.array([0, 4, 7, -9], I32), np.array([2, 0, 5, 1], I32)],
          [normal(5, 1, 3), np.array([1, 1, 3, 2], I32), np.array([0, 0, 1, 2], I32)]]),
    Case("vmapped dynamic index (gather batching)", jax.vmap(lambda x, i: x[i]), [spec((3, 5, 2)), spec((3,), I32)],
         [[normal(3, 5, 2), np.array([4, 0, 2], I32)]]),
    # scatter: update computations, out-of-range updates dropped
    Case("scatter add out of range dropped", lambda x, i, v: x.at[i].add(v), [spec((6,)), spec((5,), I32),
                                                                             spec((5,))],
         [[normal(6), np.array([1, 1, 9, -3, -20], I32), normal(5)]]),
    Case("scatter set rows", lambda x, i, v: x.at[i, :].set(v), [spec((5, 3)), spec((2,), I32), spec((2, 3))],
         [[normal(5, 3), np.array([3, 0], I32), normal(2, 3)], [normal(5, 3), np.array([7, 1], I32), normal(2, 3)]]),
    Case("scatter mul min max int", lambda x, i, v: (x.at[i].multiply(v), x.at[i].min(v), x.at[i].max(v)),
         [spec((6,), I32), spec((4,), I32), spec((4,), I32)],
         [[ints(-9, 9, 6), np.array([0, 2, 2, 8], I32), ints(-9, 9, 4)]]),
    Case("scatter bool and int8", lambda m, x, i: (m.at[i].set(True), x.at[i].add(jnp.int8(100))),
         [spec((5,), np.bool_), spec((5,), np.int8), spec((3,), I32)],
         [[np.array([0, 1, 0, 0, 1], bool), ints(-100, 100, 5, dtype=np.int8), np.array([0, 3, 3], I32)]]),
    Case("scatter windows partly out of range", lambda x, i, u: lax.scatter_add(
        x, i, u, lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                             scatter_dims_to_operand_dims=(0, 1)),
        mode=lax.GatherScatterMode.FILL_OR_DROP),
         [spec((5, 4)), spec((3, 2), I32), spec((3, 3))],
         [[normal(5, 4), np.array([[1, 0], [2, 2], [4, 1]], I32), normal(3, 3)]]),
    Case("scatter symbolic rows", lambda x, i: x.at[i].add(1.0), [spec((b, 3)), spec((2,), I32)],
         [[normal(4, 3), np.array([1, 9], I32)], [normal(2, 3), np.array([1, 1], I32)]]),
    Case("vmapped scatter (batching dims)", jax.vmap(lambda x, i, v: x.at[i].set(v)),
         [spec((3, 5)), spec((3,), I32), spec((3,))], [[normal(3, 5), np.array([4, 0, 2], I32), normal(3)]]),
    # dynamic_slice / dynamic_update_slice: starts clamped
    Case("dynamic_slice clamped", lambda x, i, j: lax.dynamic_slice(x, (i, j), (2, 3)),
         [spec((5, 6)), spec((), I32), spec((), I32)],
         [[normal(5, 6), np.array(1, I32), np.array(2, I32)], [normal(5, 6), np.array(9, I32), np.array(-4, I32)]]),
    Case("dynamic_slice symbolic", lambda x, i: lax.dynamic_slice_in_dim(x, i, 2, axis=1),
         [spec((b, 6)), spec((), I32)], [[normal(3, 6), np.array(5, I32)], [normal(1, 6), np.array(-1, I32)]]),
    Case("dynamic_update_slice clamped", lambda x, u, i: lax.dynamic_update_slice(x, u, (i, 1)),
         [spec((5, 4), I32), spec((2, 3), I32), spec((), I32)],
         [[ints(0, 9, 5, 4), ints(10, 20, 2, 3), np.array(2, I32)],
          [ints(0, 9, 5, 4), ints(10, 20, 2, 3), np.array(17, I32)],
          [ints(0, 9, 5, 4), ints(10, 20, 2, 3), np.array(-3, I32)]]),
    Case("dynamic_update_slice symbolic update", lambda x, u, i: lax.dynamic_update_slice(x, u, (0, i)),
         [spec((b, 6)), spec((b, 2)), spec((), I32)], [[normal(3, 6), normal(3, 2), np.array(5, I32)],
                                                        [normal(1, 6), normal(1, 2), np.array(2, I32)]]),
    # elementwise with XLA's edges
    Case("integer divide and remainder by zero", lambda x, y: (lax.div(x, y), lax.rem(x, y)),
         [spec((b,), I32), spec((b,), I32)], [[np.array([7, -7, 5, -2147483648, -2147483648, 0, 9], I32),
                                               np.array([2, 2, 0, -1, 0, 0, -4], I32)]]),
    Case("int8 and uint32 divide by zero", lambda x, y, u, v: (lax.div(x, y), lax.rem(x, y), lax.div(u, v),
                                                               lax.rem(u, v)),
         [spec((4,), np.int8), spec((4,), np.int8), spec((3,), np.uint32), spec((3,), np.uint32)],
         [[np.array([-128, 7, -7, 3], np.int8), np.array([-1, 0, 3, -2], np.int8),
           np.array([7, 4000000000, 5], np.uint32), np.array([0, 3, 2], np.uint32)]]),
    Case("float remainder", lambda x, y: lax.rem(x, y), [spec((4,)), spec((4,))],
         [[np.array([5.5, -5.5, 3.0, 1.0], F32), np.array([2.0, 2.0, -0.0, np.inf], F32)]]),
    Case("log1p expm1 near zero", lambda x: (jnp.log1p(x), jnp.expm1(x)), [spec((8,))],
         [[np.array([1e-7, -1e-7, 0.5, -0.5, 30.0, -30.0, 1e-30, 0.0], F32)]]),
    Case("atan2 signed zeros and infinities", lambda y, x: jnp.arctan2(y, x), [spec((10,)), spec((10,))],
         [[np.array([0.0, -0.0, 0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, 2.0, -3.0], F32),
           np.array([0.0, 0.0, -0.0, -0.0, -0.0, 0.0, np.inf, -np.inf, -5.0, 7.0], F32)]]),
    Case("rounding sign cbrt", lambda x: (jnp.round(x), lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO),
                                          jnp.sign(x), jnp.cbrt(x), jnp.floor(x), jnp.ceil(x)),
         [spec((9,))], [[np.array([0.5, 1.5, -2.5, 0.49999997, -0.0, np.nan, 7.9, -8.0, 2.5e9], F32)]]),
    Case("clamp max min with NaN", lambda x, y: (jnp.clip(x, -1.0, 1.0), jnp.maximum(x, y), jnp.minimum(x, y)),
         [spec((5,)), spec((5,))], [[np.array([np.nan, -3.0, 0.5, 2.0, 1.0], F32),
                                     np.array([1.0, np.nan, 0.25, 3.0, 1.0], F32)]]),
    Case("float power is_finite", lambda x, y: (x ** y, jnp.isfinite(x)), [spec((5,)), spec((5,))],
         [[np.array([2.0, 0.0, -2.0, np.inf, np.nan], F32), np.array([0.5, -1.0, 3.0, 2.0, 0.0], F32)]]),
    Case("bitwise and shifts", lambda x, y: (x & y, x | y, x ^ y, ~x, lax.shift_left(x, y),
                                             lax.shift_right_logical(x, y), lax.shift_right_arithmetic(x, y),
                                             lax.population_count(x)),
         [spec((6,), I32), spec((6,), I32)], [[np.array([-8, 7, -1, 123456, 5, -2147483648], I32),
                                               np.array([1, 31, 32, 40, -1, 3], I32)]]),
    Case("count leading zeros, reduce_precision", lambda x, u, f: (lax.clz(x), lax.clz(u), lax.reduce_precision(
        f, 8, 7), lax.reduce_precision(f, 5, 10), lax.reduce_precision(f, 8, 23)),
         [spec((5,), I32), spec((3,), np.uint8), spec((4,))],
         [[np.array([0, 1, -1, 65536, 2147483647], I32), np.array([0, 1, 200], np.uint8),
           np.array([1.00390625, 70000.0, 1e-6, 3.14159], F32)]]),
    Case("uint8 bitwise and bools", lambda x, y, p, q: (x & y, lax.shift_right_arithmetic(x, y), ~x,
                                                         lax.population_count(x), p & q, p | q, p ^ q, ~p),
         [spec((4,), np.uint8), spec((4,), np.uint8), spec((4,), np.bool_), spec((4,), np.bool_)],
         [[np.array([200, 7, 255, 128], np.uint8), np.array([1, 9, 3, 7], np.uint8),
           np.array([0, 0, 1, 1], bool), np.array([0, 1, 0, 1], bool)]]),
    Case("comparisons with NaN", lambda x, y: (x < y, x <= y, x == y, x != y, x > y, x >= y),
         [spec((4,)), spec((4,))], [[np.array([np.nan, 1.0, np.nan, -0.0], F32),
                                     np.array([1.0, np.nan, np.nan, 0.0], F32)]]),
    Case("unsigned and bool comparisons", lambda x, y, p, q: (x < y, x >= y, p < q, p == q),
         [spec((3,), np.uint32), spec((3,), np.uint32), spec((2,), np.bool_), spec((2,), np.bool_)],
         [[np.array([4000000000, 1, 5], np.uint32), np.array([3, 4000000000, 5], np.uint32),
           np.array([0, 1], bool), np.array([1, 1], bool)]]),
    Case("float to int saturates, NaN to 0", lambda x: (x.astype(jnp.int32), x.astype(jnp.uint8),
                                                        x.astype(jnp.int64), x.astype(jnp.bool_),
                                                        x.astype(jnp.int8)),
         [spec((8,))], [[np.array([np.nan, 3e9, -3e9, -1.7, 255.9, 256.0, -0.0, np.inf], F32)]]),
    Case("conversions between every dtype", lambda x: tuple(x.astype(t) for t in (
        jnp.int8, jnp.int16, jnp.uint16, jnp.uint32, jnp.uint64, jnp.float16, jnp.float64, jnp.bool_)),
         [spec((5,), I32)], [[np.array([-70000, -1, 0, 300, 70000], I32)]]),
    Case("argmax argmin with NaN and ties", lambda x, i: (jnp.argmax(x, axis=1), jnp.argmin(x, axis=0),
                                                          jnp.argmax(i, axis=0), jnp.argmin(i, axis=1)),
         [spec((3, 4)), spec((3, 4), I32)],
         [[np.array([[1, 5, 5, 2], [np.nan, 1, np.nan, 0], [0, 0, 0, 0]], F32),
           np.array([[1, 5, 5, 2], [3, -1, 7, -1], [0, 9, 0, 0]], I32)]]),
    Case("argmax symbolic", lambda x: (jnp.argmax(x, axis=1), jnp.argmin(x, axis=0)), [spec((b, 7))],
         [[normal(3, 7)], [normal(1, 7)]]),
    Case("reduce and or", lambda p: (jnp.all(p, axis=0), jnp.any(p, axis=1)), [spec((b, 3), np.bool_)],
         [[np.array([[1, 0, 1], [1, 1, 0]], bool)]]),
    # sort, top_k: NaN and signed zeros in total order, ties stable
    Case("sort with NaN and signed zeros", lambda x: (jnp.sort(x), jnp.argsort(x), jnp.sort(x, descending=True)),
         [spec((9,))], [[np.array([3.0, np.nan, -0.0, 0.0, -np.inf, 1.0, np.nan, -0.0, 1.0], F32)]]),
    Case("long sort (TopK) with NaN, argsort of ints", lambda x, i: (jnp.sort(x), jnp.argsort(x), jnp.argsort(i)),
         [spec((3000,)), spec((b,), np.int8)],
         [[np.where(rng.random(3000) < 0.05, np.nan, np.round(normal(3000), 1)).astype(F32),
           ints(-5, 5, 40, dtype=np.int8)]]),
    Case("sort rows symbolic", lambda x: (jnp.sort(x, axis=0), jnp.argsort(x, axis=1)), [spec((b, 5))],
         [[normal(3, 5)], [np.round(normal(4, 5))]]),
    Case("sort several operands, two keys", lambda k1, k2, v: lax.sort((k1, k2, v), num_keys=2),
         [spec((6,), I32), spec((6,)), spec((6,), np.int8)],
         [[np.array([2, 1, 2, 1, 0, 2], I32), np.array([0.5, 0.5, -1.0, np.nan, 3.0, 0.5], F32),
           np.arange(6, dtype=np.int8)]]),
    Case("top_k with ties and NaN", lambda x, i: (*lax.top_k(x, 3), *lax.top_k(i, 2)),
         [spec((2, 6)), spec((5,), I32)],
         [[np.array([[1, 5, np.nan, 5, -np.inf, 0.0], [-0.0, 0.0, -0.0, 2.0, np.inf, 1]], F32),
           np.array([4, 9, 4, 9, -3], I32)]]),
    # control flow
    Case("fori_loop", lambda x: lax.fori_loop(0, 5, lambda i, v: v * 2.0 + i, x), [spec((b, 3))],
         [[normal(2, 3)], [normal(1, 3)]]),
    Case("while_loop data dependent", lambda x, n: lax.while_loop(lambda c: c[1] < n, lambda c: (c[0] * 1.5,
                                                                                                 c[1] + 1), (x, 0)),
         [spec((4,)), spec((), I32)], [[normal(4), np.array(3, I32)], [normal(4), np.array(-1, I32)]]),
    Case("scan with outputs", lambda x: lax.scan(lambda c, xi: (c + xi, jnp.tanh(c * xi)), jnp.zeros(3), x),
         [spec((5, 3))], [[normal(5, 3)]]),
    Case("cond", lambda p, x: lax.cond(p > 0, lambda v: jnp.sin(v), lambda v: v * 3.0, x),
         [spec((), I32), spec((b,))], [[np.array(1, I32), normal(3)], [np.array(-2, I32), normal(2)]]),
    Case("switch index out of range", lambda i, x: lax.switch(i, [lambda v: v + 1.0, lambda v: v * 2.0,
                                                                   lambda v: -v], x),
         [spec((), I32), spec((3,))], [[np.array(k, I32), normal(3)] for k in (-4, 0, 1, 2, 7)]),
    Case("optimization_barrier", lambda x: lax.optimization_barrier((x * 2.0, x + 1.0)), [spec((3,))],
         [[normal(3)]]),
    # bfloat16 and float16: float32 inside, rounded where converted and at the outputs
    Case("bfloat16 arithmetic and conversions", lambda x, y: (
        x * y + 1, jnp.exp(x), (x.astype(jnp.float32) * 3.3).astype(jnp.bfloat16), x.astype(jnp.int32),
        jnp.arange(300).astype(jnp.bfloat16), x.astype(jnp.float16), jnp.maximum(x, y), jnp.sort(y),
        x * jnp.array([1.5, -jnp.inf, jnp.nan, 0.1], jnp.bfloat16),
        jnp.asarray(np.linspace(-3, 3, 200), jnp.bfloat16) * x[:1, :1]),
         [spec((b, 4), jnp.bfloat16), spec((b, 4), jnp.bfloat16)],
         [[normal(3, 4).astype(jnp.bfloat16) * 5, normal(3, 4).astype(jnp.bfloat16)]]),
    Case("float16 arithmetic and conversions", lambda x, i: (
        x * x - 1, jnp.tanh(x), x.astype(jnp.int8), i.astype(jnp.float16), jnp.cumsum(x, axis=1), x[:, ::-1],
        x @ x.T, jnp.array([1.5, 70000.0]).astype(jnp.float16)),
         [spec((3, 4), np.float16), spec((5,), I32)], [[normal(3, 4, dtype=np.float16) * 8, ints(-70000, 70000, 5)]]),
    Case("eigh (LAPACK custom call)", lambda x: jnp.linalg.eigh(x), [spec((3, 3))], [],
         refused="stablehlo.custom_call @lapack_ssyevd_ffi"),
    Case("rng_bit_generator (its key bitcast first)", lambda k: lax.rng_bit_generator(k, (4,))[1],
         [spec((4,), np.uint32)], [[ints(0, 2**31 - 1, 4).astype(np.uint32)]]),
    Case("complex numbers", lambda x: jnp.abs(lax.complex(x, x)), [spec((3,))], [[normal(3)]]),
    Case("fft", lambda x: jnp.fft.rfft(x).real, [spec((8,))], [[normal(8)]]),
    Case("tanh of complex numbers", lambda x: jnp.tanh(jnp.fft.fft(x)).real, [spec((4,))], [],
         refused="stablehlo.tanh"),
    Case("cumlogsumexp over 100 (a reduce_window body of several operations, over 64 positions)",
         lambda x: lax.cumlogsumexp(x), [spec((100,))], [], refused="stablehlo.reduce_window"),
    Case("two-key sort too long for its quadratic form", lambda x, y: lax.sort((x, y), num_keys=2),
         [spec((70000,)), spec((70000,))], [], refused="stablehlo.sort"),
]


#: The batch of this module's models, with JAX's outputs, to run in onnxruntime-web too (empty: no Node).
_WEB: list[WebBatch] = []


@pytest.fixture(scope="module", autouse=True)
def onnxruntime_web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every case that converts also runs in onnxruntime-web (WebAssembly, under Node) at the module's end,
    compared with the same outputs of ``jax.jit`` and the same tolerances."""
    yield from module_batch(_WEB, tmp_path_factory.mktemp("onnxruntime-web"))


def _check(case: Case, directory: Path) -> None:
    check_case(case, directory, web=_WEB, location="test_onnx_corpus.py:")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_case_matches_jax_or_is_refused_by_name(case: Case, tmp_path: Path) -> None:
    _check(case, tmp_path)


#: Every operation the corpus refuses (the closing note of the issue lists them).
REFUSED = ["stablehlo.custom_call @lapack_ssyevd_ffi", "stablehlo.reduce_window", "stablehlo.sort",
           "stablehlo.tanh"]


def test_every_case_is_either_matched_or_refused() -> None:
    assert len({c.name for c in CASES}) == len(CASES)
    assert sorted({c.refused for c in CASES if c.refused}) == REFUSED
    assert all(c.args for c in CASES if c.refused is None)


def test_the_runtime_adapter_runs_a_model_in_a_process_without_jax(tmp_path: Path) -> None:
    case = CASES[0]
    path = save(to_onnx(case), tmp_path, "case")
    np.save(tmp_path / "x.npy", case.args[0][0])
    np.save(tmp_path / "want.npy", expected(case)[0][0])
    code = (
        "import sys, numpy as np\n"
        "from jaxport.adapters.onnx.runtime import OnnxRuntimeModel\n"
        f"got, = OnnxRuntimeModel({str(path)!r}).run([np.load({str(tmp_path / 'x.npy')!r})])\n"
        f"np.testing.assert_allclose(got, np.load({str(tmp_path / 'want.npy')!r}), rtol=1e-6)\n"
        "assert not [m for m in sys.modules if m.split('.')[0] in ('jax', 'jaxlib', 'tensorflow')]\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
