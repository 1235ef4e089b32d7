"""What the user corpus (``test_onnx_user_corpus.py``) found wrong or failing in the ONNX translation, fixed.

Each case converts, runs on ONNX Runtime and equals ``jax.jit`` on edge
inputs: ``log1p(-inf)`` is NaN; a broadcast to an empty shape (``jnp.pad``
with a zero width: ONNX Runtime's optimizer took the ``Expand`` for a no-op);
an outer product passes ONNX's shape inference (its data propagation
misread it); a transposed matrix times a vector (ONNX Runtime's fusion of
the transposition got it wrong); ``top_k`` orders a NaN with its sign bit
set last, as XLA (at opset 26); integer products wrap (ONNX Runtime's
``ReduceProd`` saturates), and a folded reduction keeps an empty dimension;
rounding halves away from zero keeps a zero's sign (``lax.round(-0.4)`` is
-0.0).
"""

from __future__ import annotations

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
from tests.helpers.onnx_corpus import Case, assert_close, check_case, expected, save, spec, to_onnx  # noqa: E402
from tests.helpers.onnx_user_corpus import assert_zero_signs  # noqa: E402
from tests.helpers.onnx_user_corpus import to_onnx as to_newest_onnx  # noqa: E402

b = jaxport.symbolic_shape("b")[0]
F32, I32 = np.float32, np.int32
EDGES = np.array([np.nan, -np.inf, -1.0, -0.5, -0.0, 0.0, 1e-30, 0.5, 3.0, np.inf, -np.nan], F32)
rng = np.random.default_rng(41)


def normal(*shape: int) -> np.ndarray:
    return rng.normal(size=shape).astype(F32)


def _product(x: jax.Array, init: Any, dims: tuple[int, ...]) -> jax.Array:
    result: jax.Array = lax.reduce(x, init, lax.mul, dims)
    return result


CASES = [
    Case("log1p on edges (log1p(-inf) is NaN)", lambda x: (jnp.log1p(x), jnp.log1p(-x)), [spec((11,))],
         [[EDGES]]),
    Case("broadcasts to empty shapes", lambda x: (
        jnp.pad(x, ((1, 2), (3, 0)), mode="edge"), jnp.pad(x, ((0, 0), (0, 2)), mode="maximum"),
        lax.broadcast_in_dim(x[:, :1], (4, 1, 0), (0, 1)), jnp.broadcast_to(x[0], (0, 6)) + 1),
         [spec((4, 6))], [[normal(4, 6)]]),
    Case("outer products", lambda u, v: (jnp.outer(u, v), jnp.kron(u[:3], v[:2]), u[:, None] * v[None, :] + 1),
         [spec((4,)), spec((5,))], [[normal(4), normal(5)]]),
    Case("transposed matrices times vectors", lambda x, v, w: (
        x.T @ v, jnp.einsum("ijk,j->ik", w, v[:3]), v @ x, jnp.dot(x.T, v) * 2, x[0] @ x[0]),
         [spec((4, 6)), spec((4,)), spec((2, 3, 5))], [[normal(4, 6), normal(4), normal(2, 3, 5)]]),
    Case("transposed matrix times vector, symbolic", lambda x, v: jnp.swapaxes(x, 0, 1) @ v,
         [spec((b, 3)), spec((b,))], [[normal(5, 3), normal(5)], [normal(1, 3), normal(1)]]),
    Case("integer products wrap (and folds over an empty kept dimension)", lambda x, u, s: (
        lax.reduce(s, np.int16(0), lax.bitwise_xor, (0,)),
        jnp.prod(x), jnp.prod(x.reshape(2, 3), axis=1), jnp.prod(u), jnp.prod(s, axis=0),
        jnp.prod(x[:0]), _product(x, np.int32(3), (0,)), jnp.prod(u.astype(jnp.uint32) + jnp.uint32(4000000000))),
         [spec((6,), I32), spec((6,), np.uint8), spec((3, b), np.int16)],
         [[np.array([2**31 - 1, 5, -2**31, 2**30, 7, 3], I32), np.array([200, 3, 255, 0, 1, 9], np.uint8),
           rng.integers(-300, 300, (3, 4)).astype(np.int16)],
          [np.array([-1, 2, -3, 4, -5, 6], I32), np.array([1, 2, 3, 4, 5, 6], np.uint8),
           np.zeros((3, 0), np.int16)]]),
]

#: At opset 26: XLA's total order, read from the float's bits.
NEWEST = [
    Case("top_k orders a NaN with its sign bit set last", lambda x, h: (
        *lax.top_k(x, 6), *lax.top_k(jnp.stack([x, -x]), 11), *lax.top_k(h, 4)),
         [spec((11,)), spec((5,), np.float16)],
         [[EDGES, np.array([-np.nan, 1.0, np.nan, -0.0, 0.0], np.float16)],
          [EDGES[::-1].copy(), np.array([np.inf, -np.inf, 65504, -np.nan, 1], np.float16)]]),
    Case("top_k of bfloat16 and of a computed NaN", lambda x: (
        *lax.top_k(x.astype(jnp.bfloat16), 5), *lax.top_k(x / (x * 0), 3)), [spec((11,))], [[EDGES]]),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_finding_matches_jax(case: Case, tmp_path: Path) -> None:
    check_case(case, tmp_path)
    check_case(case, tmp_path, model_of=to_newest_onnx)


@pytest.mark.parametrize("case", NEWEST, ids=[c.name for c in NEWEST])
def test_the_finding_matches_jax_at_opset_26(case: Case, tmp_path: Path) -> None:
    check_case(case, tmp_path, model_of=to_newest_onnx)


def test_top_k_below_opset_26_keeps_its_opset_and_orders_positive_nans_first(tmp_path: Path) -> None:
    case = Case("top_k at opset 21", lambda x: lax.top_k(x, 6), [spec((10,))],
                [[np.array([np.nan, -np.inf, -1.0, -0.0, 0.0, 1e-30, 0.5, 3.0, np.inf, np.nan], F32)]])
    assert to_onnx(case).opset_import[0].version == 21
    check_case(case, tmp_path)


def test_rounding_halves_away_from_zero_keeps_the_sign_of_zero(tmp_path: Path) -> None:
    x = np.array([-2.5, -1.5, -0.5, -0.4, -0.0, 0.0, 0.3, 0.5, 2.5, 3.7, 8388607.5, -8388607.5, 1e30, np.nan,
                  np.inf, -np.inf, 0.49999997], F32)
    case = Case("round half away from zero", lambda x: (lax.round(x), jnp.round(x), lax.round(
        x.astype(jnp.float16)), jnp.floor_divide(x, -4.0)), [spec((17,))], [[x]])
    got = OnnxRuntimeModel(save(to_onnx(case), tmp_path, "round"), threads=1).run([x])
    (want,) = expected(case)
    assert_close(got, want)
    assert_zero_signs(got, want)
