"""What the ONNX translation refused before issue 40, converted, run on ONNX Runtime, compared with ``jax.jit``.

Each case is on edge inputs (NaN, infinities, signed zeros, empty and
batched shapes); a case either matches JAX or is refused with the typed
error naming the operation, as in the corpus (``test_onnx_corpus.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("onnx", reason="the ONNX tests need the jaxport[onnx] extra (onnx)")
pytest.importorskip("onnxruntime", reason="the ONNX tests need the jaxport[onnx] extra (onnxruntime)")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import jax.scipy.linalg  # noqa: E402
from jax import lax  # noqa: E402
from jax._src.lax.lax import eq_to_p, le_to_p, lt_to_p  # noqa: E402  # JAX's total-order comparisons

import jaxport  # noqa: E402
from jaxport.errors import UnsupportedOperationError  # noqa: E402
from jaxport.adapters.onnx.translate import translate  # noqa: E402
from tests.helpers.onnx_corpus import Case, check_case, spec  # noqa: E402
from tests.helpers.web_batch import WebBatch, module_batch  # noqa: E402

b = jaxport.symbolic_shape("b")[0]
rng = np.random.default_rng(40)
F32, I32, U8, U32 = np.float32, np.int32, np.uint8, np.uint32
#: NaN of both signs, both infinities, both zeros, ties (no subnormal: XLA's CPU flushes them to zero,
#: ONNX Runtime does not).
EDGES = np.array([np.nan, -np.inf, -1.5, -0.0, 0.0, 1.5, 1.5, np.inf, -np.nan], F32)


def ints(low: int, high: int, *shape: int, dtype: Any = I32) -> np.ndarray:
    return rng.integers(low, high, size=shape).astype(dtype)


def _xor_all(x: jax.Array, axes: Any) -> jax.Array:
    result: jax.Array = lax.reduce(x, np.array(0, x.dtype), lax.bitwise_xor, axes)
    return result


def to_onnx(case: Case, max_opset: int = 26) -> Any:
    """The case exported and translated, up to opset ``max_opset`` (26: ``BitCast``)."""
    record = jaxport.export(jax.jit(case.function))(*case.specs).record
    return translate(record, input_names=[f"in{i}" for i in range(len(record.in_avals))],
                     output_names=[f"out{j}" for j in range(len(record.out_avals))], max_opset=max_opset)


BITS = np.array([0x7F800001, 0x7FC00001, 0xFFC12345, 0x7FFFFFFF, 0x00800000, 0x38800000, 0x387FFFFF, 0x477FEFFF,
                 0x477FF000, 0x00000001, 0x80000001, 0x3F808000, 0x3F818000, 0xC0200000, 0x7F7FFFFF], np.uint32)
#: Edge floats by their bits: NaNs with payloads and signs, the smallest normal and subnormals, halfway cases.
EDGE_BITS = np.concatenate([BITS.view(F32), EDGES])
with np.errstate(over="ignore", invalid="ignore"):
    SCALED = (np.concatenate([EDGE_BITS, EDGE_BITS]) * F32(3.3)).reshape(2, 24)


def _reduce_precisions(x: jax.Array) -> tuple[jax.Array, ...]:
    return tuple(lax.reduce_precision(x, e, m) for e, m in ((5, 10), (8, 7), (8, 0), (3, 1), (5, 23), (4, 30),
                                                            (11, 2), (1, 1)))


CASES: list[Case] = [
    Case("reduce xor or and of integers", lambda x, u: (
        _xor_all(x, (1,)), lax.reduce(x, np.int32(-1), lax.bitwise_and, (0,)),
        lax.reduce(u, np.uint8(0), lax.bitwise_or, (0, 1)), lax.reduce(x, np.int32(5), lax.bitwise_or, ()),
        _xor_all(u, (0,))),
         [spec((b, 5), I32), spec((3, 4), U8)],
         [[ints(-2**31, 2**31 - 1, 3, 5), ints(0, 256, 3, 4, dtype=U8)],
          [ints(-9, 9, 1, 5), ints(0, 256, 3, 4, dtype=U8)]]),
    Case("reduce xor empty and batched", lambda x, p: (_xor_all(x, (0, 2)), lax.reduce(
        p, False, lax.bitwise_xor, (1,)), lax.reduce(x, np.uint32(7), lax.bitwise_xor, (1,))),
         [spec((2, b, 3), U32), spec((4, b), np.bool_)],
         [[ints(0, 50, 2, 0, 3, dtype=U32), np.zeros((4, 0), bool)],
          [ints(0, 2**32, 2, 6, 3, dtype=U32), rng.random((4, 6)) < 0.5]]),
    Case("reduce_window bodies of several operations: cumlogsumexp, a strided logaddexp pool", lambda x, y: (
        lax.cumlogsumexp(x, axis=1), lax.cumlogsumexp(x, axis=0, reverse=True),
        lax.reduce_window(y, -jnp.inf, jnp.logaddexp, (2, 3), (1, 2), "SAME")),
         [spec((4, 6)), spec((5, 7))],
         [[np.array([[0.0, -np.inf, np.inf, np.nan, 1.0, 88.0]] * 4, F32) * np.array([[1], [-1], [0.5], [2]], F32),
           rng.normal(size=(5, 7)).astype(F32)]]),
    Case("two-key sort of 5,000 elements (ranked in blocks), NaN, signed zeros, ties", lambda k, x, v: lax.sort(
        (k, x, v), num_keys=2),
         [spec((5000,), I32), spec((5000,)), spec((5000,), I32)],
         [[ints(0, 30, 5000), np.where(rng.random(5000) < 0.05, np.nan, np.round(rng.normal(size=5000), 1)).astype(F32)
           * np.where(rng.random(5000) < 0.5, -1, 1).astype(F32), np.arange(5000, dtype=I32)]]),
    Case("searchsorted with NaN, signed zeros and infinities (TOTALORDER)", lambda a, v: (
        jnp.searchsorted(a, v), jnp.searchsorted(a, v, side="right"),
        jnp.searchsorted(a, v, method="compare_all")),
         [spec((7,)), spec((b,))],
         [[np.array([-np.inf, -1.5, -0.0, 0.0, 1.5, np.inf, np.nan], F32), EDGES],
          [np.array([-3.0, -0.0, -0.0, 0.0, 2.0, 2.0, 9.0], F32), EDGES[:3]]]),
    Case("bitcast_convert between types of one width", lambda x, i, h: (
        lax.bitcast_convert_type(x, jnp.uint32), lax.bitcast_convert_type(x, jnp.int32),
        lax.bitcast_convert_type(i, jnp.float32), lax.bitcast_convert_type(h, jnp.int16),
        lax.bitcast_convert_type(lax.bitcast_convert_type(h, jnp.uint16), jnp.float16)),
         [spec((b,)), spec((3,), I32), spec((4,), np.float16)],
         [[EDGE_BITS, np.array([0x7F800001, -1, 0x00000001], I32),
           np.array([np.nan, -0.0, 65504.0, 6e-8], np.float16)]]),
    Case("copysign ldexp nextafter (bitcast_convert)", lambda x, y, n: (
        jnp.copysign(x, y), jnp.ldexp(x, n), jnp.nextafter(x, y)),
         [spec((9,)), spec((9,)), spec((9,), I32)],
         [[np.array([1.5, -2.0, 0.0, -0.0, np.inf, np.nan, 3.0, 1e-38, 7.0], F32),
           np.array([-0.0, 0.0, -1.0, 2.0, -np.inf, -1.0, np.nan, 0.0, 7.0], F32),
           np.array([0, 3, -2, 5, 1, 1, 130, -20, -200], I32)]]),
    Case("reduce_precision exactly (float32 and batched)", _reduce_precisions, [spec((b, 24))],
         [[EDGE_BITS.reshape(1, 24)], [SCALED],
          [np.zeros((0, 24), F32)]]),
    Case("total order of NaNs of both signs (TOTALORDER not canonical)", lambda x, y, d: (
        lt_to_p.bind(x, y), le_to_p.bind(x, y), eq_to_p.bind(x, y), lt_to_p.bind(d, d[::-1])),
         [spec((24,)), spec((24,)), spec((5,))],
         [[EDGE_BITS, EDGE_BITS[::-1].copy(), np.array([-np.nan, -0.0, 0.0, np.nan, -np.inf], F32)]]),
]


#: The batch of this module's models, with JAX's outputs, to run in onnxruntime-web too (empty: no Node).
_WEB: list[WebBatch] = []


@pytest.fixture(scope="module", autouse=True)
def onnxruntime_web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every case that converts also runs in onnxruntime-web (WebAssembly, under Node: BitCast at opset 26
    too) at the module's end, compared with the same outputs of ``jax.jit``."""
    yield from module_batch(_WEB, tmp_path_factory.mktemp("onnxruntime-web"))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_case_matches_jax_or_is_refused_by_name(case: Case, tmp_path: Path) -> None:
    check_case(case, tmp_path, to_onnx, _WEB)


def test_a_model_that_needs_bitcast_is_written_at_opset_26_the_others_at_21_and_opset_caps_it(
        tmp_path: Path) -> None:
    import onnx

    x = jax.ShapeDtypeStruct((3,), F32)
    signs = jaxport.export(jax.jit(jnp.copysign))(x, x)
    plain = jaxport.export(jax.jit(jnp.sin))(x)
    for exported, name, opset in ((signs, "signs", 26), (plain, "plain", 21)):
        manifest = jaxport.to_onnx(exported, tmp_path / name)
        (path,) = (tmp_path / name).glob("*.onnx")
        assert onnx.load(str(path)).opset_import[0].version == opset
        assert manifest.target_details["opset"] == opset
        runtime = jaxport.load_converted(tmp_path / name)
        (call,) = runtime.values()
        args = [np.array([1.0, -np.nan, 0.0], F32), np.array([-0.0, 2.0, -np.inf], F32)][:len(exported.in_avals)]
        np.testing.assert_array_equal(np.signbit(call(*args)), np.signbit(np.asarray(jax.jit(
            jnp.copysign if name == "signs" else jnp.sin)(*args))))
    with pytest.raises(UnsupportedOperationError, match=r"stablehlo.bitcast_convert .*BitCast \(opset 26\), "
                                                        r"newer than the opset 23 asked for"):
        jaxport.to_onnx(signs, tmp_path / "capped", opset=23)
    assert not (tmp_path / "capped").exists()
    with pytest.raises(UnsupportedOperationError, match="stablehlo.bitcast_convert"):
        to_onnx(Case("at 21", jnp.copysign, [spec((3,)), spec((3,))], []), max_opset=21)


def _spd(*batch: int, n: int = 4) -> np.ndarray:
    m = rng.normal(size=(*batch, n, n)).astype(F32)
    return (m @ np.swapaxes(m, -1, -2) + n * np.eye(n, dtype=F32)).astype(F32)


def _sym(*batch: int, n: int) -> np.ndarray:
    m = rng.normal(size=(*batch, n, n)).astype(F32)
    return ((m + np.swapaxes(m, -1, -2)) / 2).astype(F32)


def _hilbert(n: int) -> np.ndarray:
    return (1.0 / (np.arange(n)[:, None] + np.arange(n)[None, :] + 1)).astype(F32)


def _repeated() -> np.ndarray:
    """A 6 by 6 matrix with the eigenvalues 2, 2, 2, -1, -1, 5."""
    q = np.linalg.qr(rng.normal(size=(6, 6)))[0]
    repeated: np.ndarray = ((q * np.array([2, 2, 2, -1, -1, 5])) @ q.T).astype(F32)
    return repeated


def _triangular_solves(a: jax.Array, b_: jax.Array, c: jax.Array) -> tuple[jax.Array, ...]:
    solve = lax.linalg.triangular_solve
    return tuple(solve(a, m, left_side=left, lower=lower, transpose_a=t, unit_diagonal=u)
                 for m, left in ((b_, True), (c, False)) for lower in (True, False) for t in (False, True)
                 for u in (False, True))


def _conv(x: jax.Array, w: jax.Array, **kw: Any) -> jax.Array:
    result: jax.Array = lax.conv_general_dilated(x, w, **kw)
    return result


CONVOLUTIONS: list[Case] = [
    Case("integer convolutions wrap as XLA's: int32, int8, uint16, grouped, dilated, padded", lambda x, w, p, q, u, v: (
        _conv(x, w, window_strides=(1,), padding="VALID"),
        _conv(x, w, window_strides=(2,), padding=((2, 1),), lhs_dilation=(2,), rhs_dilation=(1,)),
        _conv(p, q, window_strides=(1, 1), padding="SAME", feature_group_count=2,
              dimension_numbers=("NHWC", "HWIO", "NHWC")),
        _conv(p, q, window_strides=(1, 1), padding="VALID", rhs_dilation=(2, 1), feature_group_count=2,
              dimension_numbers=("NHWC", "HWIO", "NHWC"), preferred_element_type=jnp.int32),
        _conv(u, v, window_strides=(1,), padding="SAME")),
         [spec((b, 2, 9), I32), spec((3, 2, 3), I32), spec((2, 5, 5, 4), np.int8), spec((3, 3, 2, 4), np.int8),
          spec((1, 1, 6), np.uint16), spec((2, 1, 3), np.uint16)],
         [[ints(-2**31, 2**31 - 1, 2, 2, 9), ints(-2**31, 2**31 - 1, 3, 2, 3),
           ints(-128, 128, 2, 5, 5, 4, dtype=np.int8), ints(-128, 128, 3, 3, 2, 4, dtype=np.int8),
           ints(0, 2**16, 1, 1, 6, dtype=np.uint16), ints(0, 2**16, 2, 1, 3, dtype=np.uint16)],
          [ints(-5, 5, 0, 2, 9), ints(-5, 5, 3, 2, 3), ints(-128, 128, 2, 5, 5, 4, dtype=np.int8),
           ints(-128, 128, 3, 3, 2, 4, dtype=np.int8), ints(0, 9, 1, 1, 6, dtype=np.uint16),
           ints(0, 9, 2, 1, 3, dtype=np.uint16)]]),
    Case("integer convolution with a window too large for ConvInteger", lambda x, w: _conv(
        x, w, window_strides=(1,), padding="VALID"), [spec((1, 40000, 1), I32), spec((1, 40000, 1), I32)], [],
         refused="stablehlo.convolution"),
]


@pytest.mark.parametrize("case", CONVOLUTIONS, ids=[c.name for c in CONVOLUTIONS])
def test_integer_convolutions_match_jax(case: Case, tmp_path: Path) -> None:
    test_the_case_matches_jax_or_is_refused_by_name(case, tmp_path)


LINALG: list[Case] = [
    Case("cholesky batched, not positive definite, NaN, empty", lambda a: jnp.linalg.cholesky(a),
         [spec((b, 4, 4))],
         [[_spd(3)], [np.stack([_spd(), -_spd(), np.full((4, 4), np.nan, F32)])], [np.zeros((0, 4, 4), F32)]]),
    Case("cholesky upper, 0x0", lambda a, e: (jnp.linalg.cholesky(a, upper=True), jnp.linalg.cholesky(e)),
         [spec((5, 5)), spec((2, 0, 0))], [[_spd(n=5), np.zeros((2, 0, 0), F32)]]),
    Case("triangular solves: sides, triangles, transposes, unit diagonals", _triangular_solves,
         [spec((b, 4, 4)), spec((b, 4, 3)), spec((b, 2, 4))],
         [[_spd(2), rng.normal(size=(2, 4, 3)).astype(F32), rng.normal(size=(2, 2, 4)).astype(F32)]]),
    Case("lu with pivots and permutation, rectangular, singular", lambda a, r, s: (
        *lax.linalg.lu(a), *lax.linalg.lu(r), *lax.linalg.lu(s)),
         [spec((3, 4, 4)), spec((3, 5)), spec((3, 3))],
         [[rng.normal(size=(3, 4, 4)).astype(F32), rng.normal(size=(3, 5)).astype(F32),
           np.array([[1, 2, 3], [2, 4, 6], [0, 1, 1]], F32)],
          [np.ones((3, 4, 4), F32), rng.normal(size=(3, 5)).astype(F32), np.zeros((3, 3), F32)]]),
    Case("solve inv det slogdet (LU)", lambda a, y: (jnp.linalg.solve(a, y), jnp.linalg.inv(a), jnp.linalg.det(a),
                                                      *jnp.linalg.slogdet(a)),
         [spec((2, 4, 4)), spec((2, 4, 2))], [[rng.normal(size=(2, 4, 4)).astype(F32) + 3 * np.eye(4, dtype=F32),
                                                rng.normal(size=(2, 4, 2)).astype(F32)]], tolerance=1e-3),
    Case("ill-conditioned (Hilbert 5, condition 5e5): cholesky, lu, solve, qr within 1e-2",
         lambda a: (jnp.linalg.cholesky(a), *lax.linalg.lu(a)[:2], jnp.linalg.solve(a, jnp.ones(5)),
                    *jnp.linalg.qr(a)), [spec((5, 5))],
         [[(1.0 / (np.arange(5)[:, None] + np.arange(5)[None, :] + 1)).astype(F32)]], tolerance=1e-2),
    Case("lu's permutation over a symbolic batch (a scatter of dynamic window sizes)",
         lambda a: lax.linalg.lu(a)[2], [spec((b, 3, 3))], [], refused="stablehlo.scatter"),
    Case("qr (Householder, LAPACK's signs): square, tall, wide, batched, signed zeros, complete", lambda a, t, w, z: (
        *jnp.linalg.qr(a), *jnp.linalg.qr(t), *jnp.linalg.qr(w), *jnp.linalg.qr(z),
        *jnp.linalg.qr(t, mode="complete"), jnp.linalg.qr(w, mode="r")),
         [spec((b, 4, 4)), spec((6, 3)), spec((3, 5)), spec((3, 3))],
         [[rng.normal(size=(2, 4, 4)).astype(F32), rng.normal(size=(6, 3)).astype(F32),
           rng.normal(size=(3, 5)).astype(F32), np.array([[-0.0, 1, 2], [1, 0, -0.0], [0, 3, 1]], F32)],
          [np.zeros((0, 4, 4), F32), rng.normal(size=(6, 3)).astype(F32), rng.normal(size=(3, 5)).astype(F32),
           np.array([[-0.0, 1, 0], [0, 0, 1], [0, 0, 0]], F32)]], tolerance=1e-4),
    Case("tridiagonal solve: pivoting rows, batched, one and several right sides, singular, n = 1",
         lambda dl, d, du, y, e: (
        lax.linalg.tridiagonal_solve(dl, d, du, y), lax.linalg.tridiagonal_solve(dl, d, du, y[..., :1]),
        lax.linalg.tridiagonal_solve(e, e + 2.0, e, e[..., None])),
         [spec((b, 6)), spec((b, 6)), spec((b, 6)), spec((b, 6, 3)), spec((2, 1))],
         [[rng.normal(size=(3, 6)).astype(F32), rng.normal(size=(3, 6)).astype(F32) * 0.3,
           rng.normal(size=(3, 6)).astype(F32), rng.normal(size=(3, 6, 3)).astype(F32), np.ones((2, 1), F32)],
          [np.ones((2, 6), F32), np.array([[0, 1, 1, 1, 1, 1], [1, 2, 3, 4, 5, 6]], F32) * np.array([[1], [0]], F32),
           np.zeros((2, 6), F32), rng.normal(size=(2, 6, 3)).astype(F32), -2 * np.ones((2, 1), F32)]],
         tolerance=1e-3),
    Case("cho_solve", lambda a, y: jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(a), y),
         [spec((4, 4)), spec((4,))], [[_spd(), rng.normal(size=4).astype(F32)]], tolerance=1e-3),
    Case("eigvalsh, eigh's eigenvalues: batched, empty, n = 1, repeated, diagonal, zero, Hilbert 6, tiny, huge",
         lambda a, one, h, s: (jnp.linalg.eigvalsh(a), jnp.linalg.eigh(a)[0], jnp.linalg.eigvalsh(one),
                               jnp.linalg.eigvalsh(h), jnp.linalg.eigvalsh(s * 1e-30), jnp.linalg.eigvalsh(s * 1e30)),
         [spec((b, 5, 5)), spec((2, 1, 1)), spec((6, 6)), spec((3, 3))],
         [[_sym(3, n=5), np.array([[[-2.5]], [[np.inf]]], F32), _hilbert(6), _sym(n=3)],
          [np.zeros((0, 5, 5), F32), np.array([[[0.0]], [[np.nan]]], F32), _repeated(), np.diag(
              np.array([3, -1, 2], F32))],
          [np.stack([np.zeros((5, 5), F32), np.eye(5, dtype=F32), np.ones((5, 5), F32)]), np.ones((2, 1, 1), F32),
           np.diag(np.arange(6, dtype=F32)), np.eye(3, dtype=F32)]], tolerance=1e-5),
    Case("eigvalsh of n = 25 and 40, the upper triangle (UPLO='U'), NaN and infinities (LAPACK fails: NaN)",
         lambda a, c, d: (jnp.linalg.eigvalsh(a), jnp.linalg.eigvalsh(c, UPLO="U"), jnp.linalg.eigvalsh(d)),
         [spec((25, 25)), spec((40, 40)), spec((4, 3, 3))],
         [[_sym(n=25), np.triu(_sym(n=40)), np.stack([
             _sym(n=3), np.full((3, 3), np.nan, F32), np.where(np.eye(3) > 0, np.inf, 1).astype(F32),
             np.array([[1, np.nan, 0], [np.nan, 2, 1], [0, 1, 3]], F32)])]], tolerance=1e-5),
    Case("eigh's eigenvectors (LAPACK's signs follow its rounding)", lambda a: jnp.linalg.eigh(a), [spec((3, 3))], [],
         refused="stablehlo.custom_call @lapack_ssyevd_ffi"),
]


@pytest.mark.parametrize("case", LINALG, ids=[c.name for c in LINALG])
def test_the_lapack_kernels_match_jax(case: Case, tmp_path: Path) -> None:
    test_the_case_matches_jax_or_is_refused_by_name(case, tmp_path)
