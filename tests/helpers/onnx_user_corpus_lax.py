"""The user corpus's ``lax`` functions: elementwise edges, control flow, windows, sorts, bits, fft and random."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .onnx_corpus import Case
from .onnx_user_corpus import EDGES, F32, FINITE, I32, U32, arrays, case, ints

X = arrays(4, 6, seed=31)
V = arrays(8, seed=32)
IMG = arrays(2, 3, 8, 8, seed=33)
W = arrays(4, 3, 3, 3, seed=34, scale=0.3)
BIG = np.array([2**31 - 1, -2**31, -1, 0, 1, 12345678, -987654, 2**30], I32)
POS = np.array([0.0, 1e-3, 0.5, 1.0, 2.5, 7.0, 30.0, np.inf, np.nan], F32)


def _scan_cumsum(x: jax.Array) -> jax.Array:
    return lax.scan(lambda c, v: (c + v, c * v), jnp.zeros(x.shape[1:]), x)[1]


def _newton_sqrt(x: jax.Array) -> jax.Array:
    root: jax.Array = lax.fori_loop(0, 20, lambda i, y: 0.5 * (y + x / y), jnp.ones_like(x))
    return root


def _collatz(n: jax.Array) -> jax.Array:
    def step(s: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        v, k = s
        return jnp.where(v % 2 == 0, v // 2, 3 * v + 1), k + 1
    return lax.while_loop(lambda s: s[0] > 1, step, (n, jnp.int32(0)))[1]


def _uniform(seed: jax.Array) -> jax.Array:
    return jax.random.uniform(jax.random.PRNGKey(seed), (5,))


CASES: list[Case] = [
    # elementwise edges
    case("lax.rsqrt", lax.rsqrt, POS),
    case("lax.integer_pow", lambda x: (lax.integer_pow(x, 3), lax.integer_pow(x, -2)), EDGES),
    case("lax.erf and erfc", lambda x: (lax.erf(x), lax.erfc(x)), EDGES),
    case("lax.erf_inv", lax.erf_inv, np.array([-1.0, -0.9, -0.0, 0.0, 0.3, 0.99, 1.0, np.nan], F32)),
    case("lax.lgamma", lax.lgamma, POS, tolerance=1e-3),
    case("lax.digamma", lax.digamma, np.array([0.1, 0.5, 1.0, 2.5, 7.0, 30.0, np.nan], F32), tolerance=1e-3),
    case("lax.igamma", lambda a, x: (lax.igamma(a, x), lax.igammac(a, x)), np.array([0.5, 1.0, 2.0, 5.0], F32),
         np.array([0.3, 1.0, 2.5, 4.0], F32), tolerance=1e-3),
    case("lax.bessel_i0e and i1e", lambda x: (lax.bessel_i0e(x), lax.bessel_i1e(x)), FINITE),
    case("lax.logistic", lax.logistic, EDGES),
    case("lax.round both ways", lambda x: (lax.round(x), lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)),
         np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.7, -0.0, np.nan, np.inf], F32)),
    case("lax.rem", lax.rem, EDGES, EDGES[::-1].copy()),
    case("lax.pow", lax.pow, np.abs(FINITE), FINITE),
    case("lax.clamp", lambda x: lax.clamp(-1.0, x, 1.5), EDGES),
    case("lax.nextafter", lax.nextafter, EDGES, np.zeros_like(EDGES)),
    case("lax.is_finite", lax.is_finite, EDGES),
    case("lax.population_count and clz", lambda x: (lax.population_count(x), lax.clz(x)), BIG),
    case("lax.shift_right_logical and arithmetic", lambda x, s: (lax.shift_right_logical(x, s),
                                                                 lax.shift_right_arithmetic(x, s)),
         BIG, np.array([0, 1, 31, 32, 4, 7, -1, 3], I32)),
    case("lax.convert_element_type", lambda x: (lax.convert_element_type(x, jnp.int8),
                                                lax.convert_element_type(x, jnp.float16)), FINITE * 10),
    case("lax.reduce_precision", lambda x: (lax.reduce_precision(x, 5, 10), lax.reduce_precision(x, 8, 7)), EDGES),
    case("lax.bitcast_convert_type", lambda x: lax.bitcast_convert_type(x, jnp.int32), EDGES),
    case("lax.bitcast_convert_type back", lambda i: lax.bitcast_convert_type(i, jnp.float32) * 2, BIG),
    case("lax.select_n", lambda p, x: lax.select_n(p, x, -x, x * 2), ints(0, 3, 8, seed=35), V),
    case("lax.cbrt and expm1", lambda x: (lax.cbrt(x), lax.expm1(x)), EDGES),
    case("lax.atan2 signed zeros", lax.atan2, np.array([0.0, -0.0, 0.0, -0.0, 1.0, -1.0, np.inf, -np.inf], F32),
         np.array([0.0, 0.0, -0.0, -0.0, np.inf, -np.inf, np.inf, -np.inf], F32)),
    # control flow
    case("lax.scan", _scan_cumsum, X),
    case("lax.fori_loop Newton sqrt", _newton_sqrt, np.abs(V) + 0.1),
    case("lax.while_loop Collatz", jax.vmap(_collatz), np.array([1, 6, 7, 27, 97], I32)),
    case("lax.cond", lambda p, x: lax.cond(p, lambda v: v * 2, lambda v: -v, x), np.array(True), V,
         more=[[np.array(False), V]]),
    case("lax.switch", lambda i, x: lax.switch(i, [jnp.sin, jnp.cos, lambda v: v * 3], x), np.array(1, I32), V,
         more=[[np.array(7, I32), V], [np.array(-2, I32), V]]),
    case("lax.map", lambda x: lax.map(lambda r: r @ r, x), X),
    case("lax.associative_scan", lambda x: lax.associative_scan(jnp.add, x, axis=1), X),
    case("lax.associative_scan max", lambda x: lax.associative_scan(jnp.maximum, x), V),
    case("jax.vmap of a scan", jax.vmap(_scan_cumsum), arrays(2, 4, 3, seed=36)),
    case("jax.grad of tanh sum", jax.grad(lambda x: jnp.sum(jnp.tanh(x) ** 2)), V),
    case("jax.jacfwd", jax.jacfwd(lambda x: jnp.sin(x) * x[::-1]), V[:4]),
    case("jax.checkpoint", jax.grad(jax.checkpoint(lambda x: jnp.sum(jnp.exp(jnp.sin(x))))), V),
    # windows and convolutions
    case("lax.conv NCHW", lambda x, w: lax.conv(x, w, (1, 1), "SAME"), IMG, W),
    case("lax.conv_general_dilated NHWC strided", lambda x, w: lax.conv_general_dilated(
        x, w, (2, 2), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC")),
         arrays(1, 9, 9, 2, seed=37), arrays(3, 3, 2, 4, seed=38)),
    case("lax.conv_transpose", lambda x, w: lax.conv_transpose(x, w, (2, 2), "SAME",
                                                               dimension_numbers=("NHWC", "HWIO", "NHWC")),
         arrays(1, 4, 4, 2, seed=39), arrays(3, 3, 2, 3, seed=40)),
    case("integer conv", lambda x, w: lax.conv(x, w, (1,), "VALID"), ints(-5, 5, 1, 2, 9, seed=41),
         ints(-3, 3, 3, 2, 3, seed=42)),
    case("max pool", lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID"), IMG),
    case("avg pool", lambda x: lax.reduce_window(x, 0.0, lax.add, (1, 1, 3, 3), (1, 1, 1, 1), "SAME") / 9, IMG),
    case("lax.cumlogsumexp", lambda x: lax.cumlogsumexp(x, axis=1), X),
    case("lax.cummax reverse", lambda x: lax.cummax(x, axis=0, reverse=True), X),
    case("lax.cumprod", lambda x: lax.cumprod(x, axis=1), X),
    # sorts, reductions, shapes
    case("lax.sort two keys", lambda k, x: lax.sort((k, x), num_keys=2), ints(0, 3, 12, seed=43), arrays(12, seed=44)),
    case("lax.sort_key_val", lambda k, v: lax.sort_key_val(k, v), V, np.arange(8, dtype=I32)),
    case("lax.top_k int", lambda x: lax.top_k(x, 2), ints(-9, 9, 3, 7, seed=45)),
    case("lax.argmax", lambda x: (lax.argmax(x, 1, jnp.int32), lax.argmin(x, 0, jnp.int32)), X),
    case("lax.reduce xor", lambda x: lax.reduce(x, np.int32(0), lax.bitwise_xor, (0,)), ints(-99, 99, 5, 3, seed=46)),
    case("lax.reduce_and on bools", lambda p: jnp.all(p, axis=0), ints(0, 2, 4, 3, seed=47).astype(bool)),
    case("lax.dot_general batched", lambda a, b: lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))),
         arrays(2, 3, 4, seed=48), arrays(2, 4, 5, seed=49)),
    case("lax.dot_general int to float32", lambda a, b: lax.dot(a, b, preferred_element_type=jnp.float32),
         ints(-5, 5, 3, 4, seed=50, dtype=np.int8), ints(-5, 5, 4, 2, seed=51, dtype=np.int8)),
    case("lax.pad interior negative", lambda x: lax.pad(x, 0.0, [(1, -1, 1), (-2, 2, 0)]), X),
    case("lax.rev and slice", lambda x: (lax.rev(x, (0,)), lax.slice(x, (1, 0), (4, 6), (2, 3))), X),
    case("lax.iota plus", lambda x: x + lax.broadcasted_iota(jnp.float32, x.shape, 1), X),
    case("lax.collapse and expand_dims", lambda x: lax.expand_dims(lax.collapse(x, 0, 2), (0,)), X),
    case("lax.dynamic_index_in_dim", lambda x, i: lax.dynamic_index_in_dim(x, i, 1, keepdims=False), X,
         np.array(-2, I32)),
    # fft and random (fft through DFT and the random bits may be refused by name)
    case("jnp.fft.rfft magnitude", lambda x: jnp.abs(jnp.fft.rfft(x)), V),
    case("jnp.fft.fft real and imaginary", lambda x: (jnp.fft.fft(x).real, jnp.fft.fft(x).imag), V),
    case("jnp.fft.irfft of rfft", lambda x: jnp.fft.irfft(jnp.fft.rfft(x), n=8), V),
    case("jnp.fft.fft2 magnitude", lambda x: jnp.abs(jnp.fft.fft2(x)), X),
    case("jax.random.uniform from a seed", _uniform, np.array(42, I32)),
    case("jax.random.normal from a key", lambda k: jax.random.normal(jax.random.wrap_key_data(k), (3, 2)),
         np.array([0, 7], U32)),
    case("jax.random.bernoulli", lambda k: jax.random.bernoulli(jax.random.wrap_key_data(k), 0.3, (10,)),
         np.array([1, 2], U32)),
    case("jax.random.permutation", lambda k, x: jax.random.permutation(jax.random.wrap_key_data(k), x),
         np.array([3, 4], U32), V),
    case("lax.rng_bit_generator", lambda k: lax.rng_bit_generator(k, (4,), jnp.uint32)[1],
         np.array([1, 2, 3, 4], U32)),
    # scalars and more lax
    case("scalar arithmetic", lambda a, b: (a * b + 1, jnp.maximum(a, b), jnp.stack([a, b]), jnp.full((2, 2), a)),
         np.array(2.5, F32), np.array(-0.5, F32)),
    case("scalar int loop bound", lambda n, x: lax.fori_loop(0, n, lambda i, v: v * 1.5 + i, x), np.array(4, I32),
         np.array(1.0, F32), more=[[np.array(0, I32), np.array(2.0, F32)], [np.array(-3, I32), np.array(2.0, F32)]]),
    case("scalar start of a dynamic slice", lambda x, s: lax.dynamic_slice_in_dim(x, s, 3), V, np.array(-2, I32),
         more=[[V, np.array(100, I32)]]),
    case("scalar concatenated with a vector", lambda a, v: jnp.concatenate([a[None], v, jnp.atleast_1d(a * 2)]),
         np.array(3.0, F32), V),
    case("lax.sort three keys", lambda a, b, c: lax.sort((a, b, c), num_keys=3), ints(0, 2, 10, seed=60),
         ints(0, 3, 10, seed=61), np.round(arrays(10, seed=62))),
    case("lax.sort unstable on unique keys", lambda x: lax.sort(x, is_stable=False), V),
    case("lax.reduce_window int sum strided padded", lambda x: lax.reduce_window(
        x, 0, lax.add, (2, 3), (2, 1), ((1, 0), (1, 1))), ints(-9, 9, 5, 6, seed=63)),
    case("lax.reduce_window min with base and window dilation", lambda x: lax.reduce_window(
        x, jnp.inf, lax.min, (2, 2), (1, 1), "VALID", base_dilation=(1, 2), window_dilation=(2, 1)), X),
    case("jax.grad of a max pool", jax.grad(lambda x: jnp.sum(lax.reduce_window(
        x, -jnp.inf, lax.max, (2, 2), (2, 2), "VALID") ** 2)), X),
    case("jax.grad of an avg pool and a conv", jax.grad(lambda x, w: jnp.sum(jnp.tanh(
        lax.conv(x, w, (1, 1), "SAME"))), argnums=(0, 1)), IMG[:1], W),
    case("lax.gather fill out of bounds", lambda x, i: x.at[i].get(mode="fill", fill_value=jnp.nan), X,
         np.array([0, 3, 4, -1, -5], I32)),
    case("lax.scatter_apply", lambda x, i: x.at[i].apply(jnp.sin), V, np.array([0, 2, 2, 8], I32)),
    case("jnp.einsum diagonal and sum", lambda x: (jnp.einsum("ii->i", x[:, :4]), jnp.einsum("ij->", x)), X),
    case("lax.reduce max of ints and bools", lambda x, p: (jnp.max(x, 1), jnp.min(x, 0), jnp.any(p, 1),
                                                          jnp.all(p, 0)), ints(-2**31, 2**31 - 1, 4, 5, seed=64),
         ints(0, 2, 4, 5, seed=65).astype(bool)),
    case("lax.exp2 and log of tiny and huge", lambda x: (lax.exp2(x), jnp.log(jnp.abs(x) + 1e-30)),
         np.array([-150.0, -126.0, -0.5, 0.0, 64.0, 127.9, 128.0, 200.0], F32)),
    case("lax.tan near pi/2 and large arguments", lambda x: (lax.tan(x), lax.sin(x), lax.cos(x)),
         np.array([1.5707963, -1.5707963, 1e4, -1e5, 3.1415927, 100.0], F32), tolerance=2e-3),
    case("jax.nn.softmax of float16", lambda x: jax.nn.softmax(x.astype(jnp.float16)), X),
    case("jax.lax.cond on a scalar predicate computed", lambda x: lax.cond(x.sum() > 0, lambda v: v.max(),
                                                                        lambda v: v.min(), x), X,
         more=[[-np.abs(X)]]),
    case("nested vmap and scan", jax.vmap(jax.vmap(lambda r: lax.scan(lambda c, v: (c + v, c), 0.0, r)[1])),
         arrays(2, 3, 4, seed=66)),
    case("jax.hessian", jax.hessian(lambda x: jnp.sum(jnp.sin(x) * x ** 2)), V[:3]),
]
