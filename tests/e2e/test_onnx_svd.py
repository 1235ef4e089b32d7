"""JAX's CPU SVD (``lapack_sgesdd_ffi``) translated to ONNX, run on ONNX Runtime, compared with ``jax.jit``.

The singular values (``compute_uv=False``: ``svdvals``, ``matrix_rank``,
``norm(a, 2)``, ``cond``) match JAX's, and so do the singular vectors of a
single column or row, with LAPACK's signs; the singular vectors of larger
matrices (``svd`` with ``compute_uv=True``) are refused with the typed error
naming the custom call and their signs (``pinv`` and ``lstsq``, whose results
do not depend on them, convert, computed where
:mod:`jaxport.adapters.onnx.ops.svd_invariance` proves it). Not compared: a
matrix with an infinity, whose SVD with vectors JAX's LAPACK does not finish
(ours gives NaN, as for a NaN).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx", reason="the ONNX tests need the jaxport[onnx] extra (onnx)")
pytest.importorskip("onnxruntime", reason="the ONNX tests need the jaxport[onnx] extra (onnxruntime)")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import jaxport  # noqa: E402
from jaxport.adapters.onnx.translate import translate  # noqa: E402
from jaxport.errors import UnsupportedOperationError  # noqa: E402
from tests.helpers.onnx_corpus import Case, check_case, spec, to_onnx  # noqa: E402

b = jaxport.symbolic_shape("b")[0]
rng = np.random.default_rng(41)
F32 = np.float32
GESDD = "stablehlo.custom_call @lapack_sgesdd_ffi"


def normal(*shape: int) -> np.ndarray:
    values: np.ndarray = rng.normal(size=shape).astype(F32)
    return values


def low_rank(m: int, n: int, r: int) -> np.ndarray:
    product: np.ndarray = (normal(m, r) @ normal(r, n)).astype(F32)
    return product


def _values(a: jax.Array) -> jax.Array:
    result: jax.Array = jnp.linalg.svd(a, compute_uv=False)
    return result


HILBERT = (1.0 / (np.arange(6)[:, None] + np.arange(6)[None, :] + 1)).astype(F32)
REPEATED = np.diag(np.array([3, 3, 1, 1, 0], F32))[:, ::-1].copy()
WITH_NAN = normal(3, 4, 4)
WITH_NAN[0, 1, 2] = np.nan
WITH_NAN[2, 0, 0] = np.inf
WITH_NAN[1, 3, 3] = -np.inf

VALUES: list[Case] = [
    Case("singular values: square, tall, wide, 1 x 1, 1 x n, 25 x 25", lambda a, t, w, s, r, big: (
        _values(a), _values(t), _values(w), _values(s), _values(r), _values(big)),
         [spec((5, 5)), spec((9, 4)), spec((3, 7)), spec((1, 1)), spec((1, 6)), spec((25, 25))],
         [[normal(5, 5), normal(9, 4), normal(3, 7), np.array([[-2.5]], F32), normal(1, 6), normal(25, 25)],
          [np.eye(5, dtype=F32), np.zeros((9, 4), F32), normal(3, 7) * F32(1e-30), np.array([[0.0]], F32),
           normal(1, 6) * F32(1e30), normal(25, 25) * F32(1e-3)]], tolerance=2e-5),
    Case("singular values batched over a symbolic batch, empty batch, NaN and infinities", _values,
         [spec((b, 4, 4))], [[normal(2, 4, 4)], [np.zeros((0, 4, 4), F32)], [WITH_NAN]], tolerance=2e-5),
    Case("singular values of a rank-deficient, repeated and ill-conditioned matrix (Hilbert 6, condition 1.5e7)",
         lambda r, d, h: (_values(r), _values(d), _values(h)), [spec((7, 5)), spec((5, 5)), spec((6, 6))],
         [[low_rank(7, 5, 2), REPEATED, HILBERT]], tolerance=2e-5),
    Case("matrix_rank (rank-deficient, batched), norm 2, cond", lambda r, a: (
        jnp.linalg.matrix_rank(r), jnp.linalg.norm(a, 2), jnp.linalg.cond(a), jnp.linalg.norm(r, 2, axis=(-2, -1))),
         [spec((4, 6, 5)), spec((4, 4))],
         [[np.stack([low_rank(6, 5, k) for k in (0, 1, 3, 5)]), normal(4, 4)],
          [np.stack([low_rank(6, 5, k) for k in (2, 4, 4, 5)]), HILBERT[:4, :4]]], tolerance=1e-3),
]


@pytest.mark.parametrize("case", VALUES, ids=[c.name for c in VALUES])
def test_the_singular_values_match_jax(case: Case, tmp_path: Path) -> None:
    check_case(case, tmp_path)


def _column_and_row(c: jax.Array, r: jax.Array) -> tuple[jax.Array, ...]:
    return (*jnp.linalg.svd(c), *jnp.linalg.svd(c, full_matrices=False), *jnp.linalg.svd(r),
            *jnp.linalg.svd(r, full_matrices=False))


#: Columns and rows: ordinary, signed zeros (the first one's sign decides), a zero tail, tiny, huge.
COLUMNS = np.array([[3, -4, 0, 1], [-0.0, 2, 1, -1], [0.0, -2, 1, 1], [-0.0, 0, 0, 0], [0.0, -0.0, 0, 0],
                    [-5, 0, 0, 0], [1e-30, 2e-30, 0, 0], [1e30, -3e30, 2e30, 0], [1, 1e-25, 0, 0]], F32)
#: An infinity (LAPACK scales it to x86's NaN: the signs follow it), and NaN (JAX's NaN everywhere).
BROKEN = np.array([[np.inf, 1, 0, 2], [-np.inf, 0, -0.0, 0], [1, np.inf, 2, 0], [-1, 0, -np.inf, 0],
                   [-0.0, np.inf, 0, 0], [np.inf, -np.inf, 0, 0], [np.nan, 1, 2, 3], [1, 2, np.nan, 0]], F32)

VECTORS: list[Case] = [
    Case("svd with vectors of a column and of a row, full and reduced: signs, zeros, tiny and huge",
         _column_and_row, [spec((9, 4, 1)), spec((9, 1, 4))], [[COLUMNS[..., None], COLUMNS[:, None, :]]],
         tolerance=1e-5),
    Case("svd with vectors of a column and of a row: infinities and NaN", _column_and_row,
         [spec((8, 4, 1)), spec((8, 1, 4))], [[BROKEN[..., None], BROKEN[:, None, :]]], tolerance=1e-5),
    Case("svd of 1 x 1, pinv over a symbolic batch, lstsq of a column, an empty batch", lambda a, c, t, y, e: (
        *jnp.linalg.svd(a), jnp.linalg.pinv(c), jnp.linalg.lstsq(t, y)[0], *jnp.linalg.svd(e)),
         [spec((3, 1, 1)), spec((b, 5, 1)), spec((5, 1)), spec((5, 2)), spec((0, 1, 3))],
         [[np.array([[[-2.0]], [[-0.0]], [[0.5]]], F32), normal(2, 5, 1), normal(5, 1), normal(5, 2),
           np.zeros((0, 1, 3), F32)]], tolerance=1e-5),
]


@pytest.mark.parametrize("case", VECTORS, ids=[c.name for c in VECTORS])
def test_the_singular_vectors_of_a_column_or_a_row_match_jax_with_lapacks_signs(case: Case, tmp_path: Path) -> None:
    check_case(case, tmp_path)


REFUSED: list[Case] = [
    Case("svd with vectors", jnp.linalg.svd, [spec((4, 3))], [], refused=GESDD),
    Case("svd reduced with vectors", lambda a: jnp.linalg.svd(a, full_matrices=False), [spec((3, 5))], [],
         refused=GESDD),
    Case("singular values of a matrix of symbolic size", _values, [spec((b, 3))], [], refused=GESDD),
    Case("svd with vectors of 2 columns", jnp.linalg.svd, [spec((5, 2))], [], refused=GESDD),
    Case("singular values of a matrix larger than 64", _values, [spec((65, 70))], [], refused=GESDD),
]


@pytest.mark.parametrize("case", REFUSED, ids=[c.name for c in REFUSED])
def test_the_singular_vectors_and_what_is_too_large_are_refused_by_name(case: Case, tmp_path: Path) -> None:
    check_case(case, tmp_path)


def test_the_vectors_refusal_names_their_signs() -> None:
    record = jaxport.export(jax.jit(jnp.linalg.svd))(spec((3, 3))).record
    with pytest.raises(UnsupportedOperationError, match="signs"):
        translate(record, input_names=["a"], output_names=["u", "s", "vh"])


def pinv(a: jax.Array) -> jax.Array:
    result: jax.Array = jnp.linalg.pinv(a)
    return result


def solve(a: jax.Array, y: jax.Array) -> jax.Array:
    result: jax.Array = jnp.linalg.lstsq(a, y)[0]
    return result


ORTHOGONAL = np.linalg.qr(normal(5, 5))[0].astype(F32)
ONLY_NAN = normal(3, 4, 4)
ONLY_NAN[0, 1, 2] = ONLY_NAN[2, 3, 3] = np.nan
INFINITE_B = np.array([[1, np.inf], [2, 4], [-np.inf, 3], [3, 3]], F32)

PINV: list[Case] = [
    Case("pinv square, tall, wide; lstsq tall and wide, a vector and a matrix on the right", lambda a, t, w, y, z: (
        pinv(a), pinv(t), pinv(w), solve(t, y), solve(w, z)),
         [spec((4, 4)), spec((6, 3)), spec((3, 6)), spec((6,)), spec((3, 2))],
         [[normal(4, 4), normal(6, 3), normal(3, 6), normal(6), normal(3, 2)],
          [normal(4, 4) * F32(1e-20), normal(6, 3) * F32(1e20), normal(20, 12)[:3, :6], normal(6), normal(3, 2)]],
         tolerance=1e-4),
    Case("pinv over a symbolic batch, an empty batch, NaN (JAX's NaN)", pinv, [spec((b, 4, 4))],
         [[normal(2, 4, 4)], [np.zeros((0, 4, 4), F32)], [ONLY_NAN]], tolerance=1e-4),
    Case("pinv of rank-deficient, zero, all-ones and repeated-value matrices (the cutoff; rotations in a block)",
         lambda r, w, z, o, q, d: (pinv(r), pinv(w), pinv(z), pinv(o), pinv(q), pinv(d)),
         [spec((7, 5)), spec((3, 8)), spec((4, 3)), spec((5, 4)), spec((5, 5)), spec((5, 5))],
         [[normal(7, 2) @ normal(2, 5), normal(3, 2) @ normal(2, 8), np.zeros((4, 3), F32), np.ones((5, 4), F32),
           2 * ORTHOGONAL, REPEATED]], tolerance=1e-5),
    Case("lstsq's whole result (residuals, rank, values) of a rank-deficient and a zero matrix; NaN and inf in b",
         lambda r, y, z, v, a, c: (*jnp.linalg.lstsq(r, y), *jnp.linalg.lstsq(z, v), solve(a, c)),
         [spec((7, 5)), spec((7, 3)), spec((4, 3)), spec((4,)), spec((4, 3)), spec((4, 2))],
         [[normal(7, 2) @ normal(2, 5), normal(7, 3), np.zeros((4, 3), F32), normal(4), normal(4, 3), INFINITE_B]],
         tolerance=1e-5),
    Case("U reduced, times a vector along k", lambda a, v: jnp.linalg.svd(a, full_matrices=False)[0] @ v,
         [spec((4, 3)), spec((3,))], [], refused=GESDD),
    Case("U @ VT (a zero singular value's vectors are free apart)", lambda a: (
        lambda r: r[0] @ r[2])(jnp.linalg.svd(a)), [spec((4, 4))], [], refused=GESDD),
]


@pytest.mark.parametrize("case", PINV, ids=[c.name for c in PINV])
def test_pinv_and_lstsq_match_jax_and_the_vectors_stay_refused(case: Case, tmp_path: Path) -> None:
    check_case(case, tmp_path)


def test_an_ill_conditioned_pinv_is_within_float32s_accuracy_of_jaxs() -> None:
    """Hilbert 6 (condition 1.5e7): its fifth value, 1.25e-5 of the first, is kept (the cutoff is 7.2e-6 of it)."""
    import onnxruntime

    hilbert, y = HILBERT, normal(6)
    model = to_onnx(Case("hilbert", lambda a, v: (pinv(a), solve(a, v)), [spec((6, 6)), spec((6,))], []))
    session = onnxruntime.InferenceSession(model.SerializeToString())
    got = session.run(None, dict(zip((i.name for i in session.get_inputs()), (hilbert, y))))
    for g, w in zip(got, jax.jit(lambda a, v: (pinv(a), solve(a, v)))(hilbert, y)):
        assert float(np.max(np.abs(g - np.asarray(w)))) <= 2e-3 * float(np.max(np.abs(w)))
