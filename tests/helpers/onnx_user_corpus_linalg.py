"""The user corpus's linear algebra: ``jnp.linalg``, ``jax.scipy.linalg`` and ``lax.linalg``, batched where JAX is.

The decompositions whose signs LAPACK chooses (``eigh``'s eigenvectors, ``svd``,
``eig``) may be refused by name; everything else matches JAX's CPU results.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.linalg as sla
import numpy as np
from jax import lax

from .onnx_corpus import Case
from .onnx_user_corpus import F32, arrays, case


def _spd(n: int, seed: int, batch: tuple[int, ...] = ()) -> np.ndarray:
    a = arrays(*batch, n, n, seed=seed)
    spd: np.ndarray = (a @ np.swapaxes(a, -1, -2) + n * np.eye(n, dtype=F32)).astype(F32)
    return spd


A = (arrays(4, 4, seed=61) + 3 * np.eye(4, dtype=F32)).astype(F32)
AB = (arrays(3, 4, 4, seed=62) + 3 * np.eye(4, dtype=F32)).astype(F32)
S = _spd(4, 63)
SB = _spd(3, 64, (2,))
RHS = arrays(4, 2, seed=65)
TALL = arrays(6, 3, seed=66)
#: Ill-conditioned: a Hilbert matrix (condition ~1.5e4 at 4).
HILBERT = (1.0 / (np.arange(4)[:, None] + np.arange(4)[None, :] + 1)).astype(F32)
SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]], F32)
TOL = 1e-3

def _q_times_r(a: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Q R and R's diagonal's magnitudes (the columns of Q beyond the rank are rounding's)."""
    q, r = jnp.linalg.qr(a)
    return q @ r, jnp.abs(jnp.diag(r))


CASES: list[Case] = [
    case("jnp.linalg.cholesky", jnp.linalg.cholesky, S, tolerance=TOL),
    case("jnp.linalg.cholesky batched", jnp.linalg.cholesky, SB, tolerance=TOL),
    case("jnp.linalg.cholesky not positive definite (NaN)", jnp.linalg.cholesky, -S, tolerance=TOL),
    case("jnp.linalg.solve", jnp.linalg.solve, A, RHS, tolerance=TOL),
    case("jnp.linalg.solve batched", lambda a, b: jnp.linalg.solve(a, b), AB, arrays(3, 4, 1, seed=67),
         tolerance=TOL),
    case("jnp.linalg.inv", jnp.linalg.inv, A, tolerance=TOL),
    case("jnp.linalg.inv Hilbert", jnp.linalg.inv, HILBERT, tolerance=5e-2),
    case("jnp.linalg.det", jnp.linalg.det, AB, tolerance=TOL),
    case("jnp.linalg.det singular", jnp.linalg.det, SINGULAR, tolerance=TOL),
    case("jnp.linalg.slogdet", jnp.linalg.slogdet, AB, tolerance=TOL),
    case("jnp.linalg.qr", jnp.linalg.qr, TALL, tolerance=TOL),
    case("jnp.linalg.qr r only", lambda a: jnp.linalg.qr(a, mode="r"), TALL, tolerance=TOL),
    case("jnp.linalg.qr complete batched", lambda a: jnp.linalg.qr(a, mode="complete"), arrays(2, 4, 3, seed=68),
         tolerance=TOL),
    case("jnp.linalg.eigh", jnp.linalg.eigh, S, tolerance=TOL),
    case("jnp.linalg.eigvalsh", jnp.linalg.eigvalsh, S, tolerance=TOL),
    case("jnp.linalg.eigvalsh batched", jnp.linalg.eigvalsh, SB, tolerance=TOL),
    case("jnp.linalg.eigh eigenvalues only", lambda a: jnp.linalg.eigh(a).eigenvalues, HILBERT, tolerance=TOL),
    case("jnp.linalg.svd", jnp.linalg.svd, TALL, tolerance=TOL),
    case("jnp.linalg.svd values only", lambda a: jnp.linalg.svd(a, compute_uv=False), TALL, tolerance=TOL),
    case("jnp.linalg.eigvals magnitudes", lambda a: jnp.abs(jnp.linalg.eigvals(a)), A, tolerance=TOL),
    case("jnp.linalg.pinv", jnp.linalg.pinv, TALL, tolerance=TOL),
    case("jnp.linalg.lstsq", lambda a, b: jnp.linalg.lstsq(a, b)[0], TALL, arrays(6, 2, seed=69), tolerance=TOL),
    case("jnp.linalg.matrix_rank", jnp.linalg.matrix_rank, TALL),
    case("jnp.linalg.norm variants", lambda a: (jnp.linalg.norm(a), jnp.linalg.norm(a, axis=1),
                                                jnp.linalg.norm(a, 1), jnp.linalg.norm(a, np.inf)), A),
    case("jnp.linalg.norm 2 (svd)", lambda a: jnp.linalg.norm(a, 2), A, tolerance=TOL),
    case("jnp.linalg.cond", jnp.linalg.cond, A, tolerance=TOL),
    case("jnp.linalg.matrix_power", lambda a: (jnp.linalg.matrix_power(a, 3), jnp.linalg.matrix_power(a, -2)),
         A / 3, tolerance=TOL),
    case("jnp.linalg.multi_dot", lambda a, b, c: jnp.linalg.multi_dot([a, b, c]), A, A.T.copy(), RHS),
    case("jnp.linalg.vector_norm and vecdot", lambda a: (jnp.linalg.vector_norm(a, ord=3, axis=0),
                                                         jnp.linalg.vecdot(a, a)), A),
    case("jnp.linalg.tensorsolve", lambda a, b: jnp.linalg.tensorsolve(a, b), A, arrays(4, seed=70), tolerance=TOL),
    case("jax.scipy.linalg.solve_triangular", lambda a, b: sla.solve_triangular(a, b, lower=True), np.tril(A), RHS,
         tolerance=TOL),
    case("jax.scipy.linalg.solve_triangular transposed unit", lambda a, b: sla.solve_triangular(
        a, b, trans=1, unit_diagonal=True), np.triu(A), RHS, tolerance=TOL),
    case("jax.scipy.linalg.cho_factor and cho_solve", lambda a, b: sla.cho_solve(sla.cho_factor(a), b), S, RHS,
         tolerance=TOL),
    case("jax.scipy.linalg.lu", sla.lu, A, tolerance=TOL),
    case("jax.scipy.linalg.lu_factor and lu_solve", lambda a, b: sla.lu_solve(sla.lu_factor(a), b), A, RHS,
         tolerance=TOL),
    case("jax.scipy.linalg.solve assume_a pos", lambda a, b: sla.solve(a, b, assume_a="pos"), S, RHS,
         tolerance=TOL),
    case("jax.scipy.linalg.expm", sla.expm, A / 4, tolerance=TOL),
    case("jax.scipy.linalg.det and inv", lambda a: (sla.det(a), sla.inv(a)), A, tolerance=TOL),
    case("jax.scipy.linalg.qr", lambda a: sla.qr(a, mode="economic"), TALL, tolerance=TOL),
    case("jax.scipy.linalg.eigh_tridiagonal", lambda d, e: sla.eigh_tridiagonal(d, e, eigvals_only=True),
         arrays(5, seed=71), arrays(4, seed=72), tolerance=TOL),
    case("jax.scipy.linalg.block_diag and toeplitz", lambda a, v: (sla.block_diag(a, a[:2, :2]), sla.toeplitz(v)),
         A, arrays(4, seed=73)),
    case("lax.linalg.tridiagonal_solve", lambda dl, d, du, b: lax.linalg.tridiagonal_solve(dl, d, du, b),
         np.array([0.0, 1.0, 0.5, -1.0], F32), np.array([4.0, 5.0, 6.0, 4.5], F32),
         np.array([1.0, -0.5, 2.0, 0.0], F32), arrays(4, 2, seed=74), tolerance=TOL),
    case("lax.linalg.triangular_solve left side", lambda a, b: lax.linalg.triangular_solve(
        a, b, left_side=True, lower=True), np.tril(A), RHS, tolerance=TOL),
    case("jnp.linalg.cholesky of 1x1 and of an empty batch", lambda a, e: (jnp.linalg.cholesky(a),
                                                                         jnp.linalg.cholesky(e)),
         np.array([[4.0]], F32), np.zeros((0, 3, 3), F32), tolerance=TOL),
    case("jnp.linalg.det and inv of a singular batch", lambda a: (jnp.linalg.det(a), jnp.linalg.slogdet(a)),
         np.stack([SINGULAR, np.zeros((2, 2), F32), np.eye(2, dtype=F32)]), tolerance=TOL),
    case("jnp.linalg.solve Hilbert 5x5", jnp.linalg.solve,
         (1.0 / (np.arange(5)[:, None] + np.arange(5)[None, :] + 1)).astype(F32), np.ones((5, 1), F32),
         tolerance=5e-2),
    case("jnp.linalg.qr of a rank-deficient matrix (Q R)", _q_times_r, np.outer(np.arange(1, 5), np.arange(1, 4))
         .astype(F32), tolerance=TOL),
    case("jax.scipy.linalg.lu of a singular matrix", sla.lu, np.array([[0.0, 1.0, 2.0], [0.0, 2.0, 4.0],
                                                                     [1.0, 0.0, 0.0]], F32), tolerance=TOL),
    case("lax.linalg.lu pivots and permutation batched", lambda a: lax.linalg.lu(a), AB, tolerance=TOL),
    case("jax.scipy.linalg.solve_triangular with a zero on the diagonal", lambda a, b: sla.solve_triangular(
        a, b, lower=True), np.array([[1.0, 0.0], [2.0, 0.0]], F32), np.array([1.0, 1.0], F32), tolerance=TOL),
    case("jnp.linalg.cholesky batched ill-conditioned", jnp.linalg.cholesky, np.stack(
        [HILBERT + 1e-3 * np.eye(4, dtype=F32), S]), tolerance=TOL),
    case("least squares by the normal equations", lambda x, y: jnp.linalg.solve(x.T @ x, x.T @ y), TALL,
         arrays(6, seed=75), tolerance=TOL),
]
