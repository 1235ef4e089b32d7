"""ONNX translation of JAX's LAPACK SVD on the CPU (``lapack_{s,d}gesdd_ffi``): the singular values (``jobz='N'``).

``jnp.linalg.svd(a, compute_uv=False)`` (and ``svdvals``, ``matrix_rank``,
``norm(a, 2)``, ``cond``) lowers to ``gesdd`` with ``mode = 'N'``: only the
singular values. They are unique, so any accurate algorithm gives LAPACK's
up to rounding; this one is one-sided Jacobi (Hestenes), all the batch's
matrices at once, in two ``Loop``\\ s:

- the matrix (transposed where it is wide, so that ``M >= N``) is scaled
  by its largest magnitude (no overflow or underflow of the squares);
- a sweep rotates every pair of columns ``p < q`` in turn, in the cyclic
  row order, by the Jacobi rotation that makes them orthogonal, where their
  cosine ``|a_p . a_q| / (|a_p| |a_q|)`` is above ``M * eps``;
- sweeps repeat while one rotated (at most :data:`_SWEEPS`): one-sided
  Jacobi converges quadratically, in 6 to 12 sweeps up to ``N = 25``;
- the singular values are the columns' norms, scaled back, in decreasing
  order.

One-sided Jacobi keeps small singular values small (relative accuracy of
the columns, not the squares of ``A^T A``), so ``matrix_rank`` of a
rank-deficient matrix agrees with LAPACK's. Against LAPACK, on 300 random
matrices up to 25 x 25 (rank-deficient, graded, scaled by ``1e-30`` and
``1e30`` included), every value was within ``2e-6`` of the largest.

At 64 x 64, the largest size translated, within ``5e-6``. A matrix with a
NaN or an infinity gives ``info = -4`` (LAPACK's for a NaN) and NaN
values, where JAX returns NaN.

The singular vectors (``mode`` ``'S'`` or ``'A'``) of a single column or
row are LAPACK's (:mod:`.svd_vector`). Of a larger matrix they are computed
by the same sweeps (:mod:`.svd_vectors`) where the module's results provably
do not depend on their convention (:mod:`.svd_invariance`: ``pinv``,
``lstsq``), and refused elsewhere. Their signs
are those LAPACK's ``sgesdd`` leaves (``sgebd2``, then ``sbdsqr`` through
``sbdsdc`` and ``slasdq`` up to 25, then ``sormbr``), and they turn on the
last bits of its rounding: a port of that sequence in float32 NumPy agreed
with every sign of JAX's on the bidiagonals LAPACK's ``sgebrd`` gives, but
only on about 95% of random matrices from its own bidiagonalization (equal
to LAPACK's within one or two ulps); moving LAPACK's own bidiagonal by one
ulp flips a pair's sign on about 1% of them (the QR iteration takes
another number of sweeps, or ``slasv2`` another branch where two diagonal
entries are equal in magnitude). ONNX operators cannot reproduce
OpenBLAS's rounding, so no translation can promise those signs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxport.adapters.onnx.builder import GraphBuilder, tensor_dtype, tensor_shape
from .common import Translation
from .lapack import backend_config, iota_of, loop
from .svd_invariance import vectors_invariant
from .svd_vector import vector_svd
from .svd_vectors import jacobi_vectors

_I64, _I32 = np.dtype(np.int64), np.dtype(np.int32)
#: The most sweeps (one-sided Jacobi converged in at most 12 on random matrices up to 25 x 25).
_SWEEPS = 30
#: The largest ``min(m, n)`` translated (the sweeps cost ``N^2 / 2`` iterations each).
_LARGEST = 64


def _gesdd(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    mode = backend_config(op).get("mode", ord("A"))
    shape = tensor_shape(op.operands[0])
    rank = len(shape)
    m, n = shape[-2:]
    if m is None or n is None:
        b.refuse("the SVD of a matrix of symbolic size (the Jacobi sweeps' pairs of columns are laid out for a "
                 "static size)")
    vectors = mode != ord("N")
    if vectors:
        if min(m, n) == 1:
            return vector_svd(b, op, args, m, n, full=mode == ord("A"))
        if not vectors_invariant(op):
            b.refuse("the singular vectors (jnp.linalg.svd with compute_uv=True) of a matrix of more than one "
                     "row and column, where the results may depend on them: their signs are those LAPACK's "
                     "bidiagonal QR iteration leaves, and its course turns on the last bits of its rounding, "
                     "which ONNX operators do not reproduce (the singular values alone, compute_uv=False, "
                     "convert, and so do pinv and lstsq, whose results do not depend on the signs)")
    if min(m, n) > _LARGEST:
        b.refuse(f"the singular values of a matrix larger than {_LARGEST} (min(m, n) = {min(m, n)}): the Jacobi "
                 f"sweeps would take too long")
    dtype = tensor_dtype(op.results[1])
    a = args[0]
    w = b.one("Transpose", [a], perm=[*range(rank - 2), rank - 1, rank - 2]) if m < n else a
    big, small = max(m, n), min(m, n)
    zero, one = b.scalar(0, dtype), b.scalar(1, dtype)
    axes = b.int64s([rank - 2, rank - 1])
    bad = b.one("Or", [b.one("IsNaN", [a]), b.one("IsInf", [a])])
    finite = b.one("Not", [b.cast(b.one("ReduceMax", [b.cast(bad, _I32), axes], keepdims=1), np.dtype(bool))])
    scale = b.one("ReduceMax", [b.one("Where", [bad, zero, b.one("Abs", [a])]), axes], keepdims=1)
    scale = b.one("Where", [b.one("Greater", [scale, zero]), scale, one])
    w = b.one("Where", [finite, b.one("Div", [w, scale]), zero])
    if vectors:  # V below the matrix: the rotations of its columns turn V's alike
        eye = b.one("Expand", [b.constant(np.eye(small, dtype=dtype), "svd_eye"), b.one("Concat", [
            b.one("Shape", [a], start=0, end=rank - 2), b.int64s([small, small])], axis=0)])
        w = b.one("Concat", [w, eye], axis=rank - 2)
    pairs = [(p, q) for p in range(small) for q in range(p + 1, small)]
    first = b.constant(np.array([p for p, _ in pairs], _I64), "svd_p")
    second = b.constant(np.array([q for _, q in pairs], _I64), "svd_q")
    columns = iota_of(b, b.scalar(small, _I64))
    tolerance = b.scalar(big * np.finfo(dtype).eps, dtype)
    last = b.int64s([-1])
    info_type = op.results[4]
    batch_shape = b.one("Shape", [a], start=0, end=rank - 2)

    def rotate(c: GraphBuilder, j: str, carried: list[str]) -> list[str]:
        v, rotations = carried
        p, q = c.one("Gather", [first, j]), c.one("Gather", [second, j])
        ap, aq = c.one("Gather", [v, p], axis=rank - 1), c.one("Gather", [v, q], axis=rank - 1)
        xp, xq = (ap, aq) if not vectors else (c.one("Slice", [x, c.int64s([0]), c.int64s([big]), last])
                                               for x in (ap, aq))
        alpha = c.one("ReduceSum", [c.one("Mul", [xp, xp]), last], keepdims=0)
        beta = c.one("ReduceSum", [c.one("Mul", [xq, xq]), last], keepdims=0)
        gamma = c.one("ReduceSum", [c.one("Mul", [xp, xq]), last], keepdims=0)
        bound = c.one("Mul", [tolerance, c.one("Mul", [c.one("Sqrt", [alpha]), c.one("Sqrt", [beta])])])
        rotated = c.one("Greater", [c.one("Abs", [gamma]), bound])
        zeta = c.one("Div", [c.one("Sub", [beta, alpha]), c.one("Mul", [c.scalar(2, dtype), gamma])])
        sign = c.one("Where", [c.one("GreaterOrEqual", [zeta, zero]), one, c.scalar(-1, dtype)])
        t = c.one("Div", [sign, c.one("Add", [c.one("Abs", [zeta]), c.one("Sqrt", [
            c.one("Add", [one, c.one("Mul", [zeta, zeta])])])])])
        rotation_cosine = c.one("Reciprocal", [c.one("Sqrt", [c.one("Add", [one, c.one("Mul", [t, t])])])])
        cosine = c.one("Unsqueeze", [c.one("Where", [rotated, rotation_cosine, one]), last])
        sine = c.one("Unsqueeze", [c.one("Where", [rotated, c.one("Mul", [rotation_cosine, t]), zero]), last])
        new_p = c.one("Sub", [c.one("Mul", [cosine, ap]), c.one("Mul", [sine, aq])])
        new_q = c.one("Add", [c.one("Mul", [sine, ap]), c.one("Mul", [cosine, aq])])
        v = c.one("Where", [c.one("Equal", [columns, p]), c.one("Unsqueeze", [new_p, last]), c.one("Where", [
            c.one("Equal", [columns, q]), c.one("Unsqueeze", [new_q, last]), v])])
        return [v, c.one("Add", [rotations, c.cast(rotated, _I32)])]

    def sweep(c: GraphBuilder, _: str, carried: list[str]) -> list[str]:
        rotations0 = c.one("Expand", [c.scalar(0, _I32), batch_shape])
        v, rotations = loop(c, c.scalar(len(pairs), _I64), [(carried[0], op.operands[0]), (rotations0, info_type)],
                            rotate)
        total = c.one("ReduceSum", [c.one("Reshape", [rotations, c.int64s([-1])]), c.int64s([0])], keepdims=0)
        return [c.one("Greater", [total, c.scalar(0, _I32)]), v]

    if pairs:  # sweeps while one rotated
        (w,) = loop(b, b.scalar(_SWEEPS, _I64), [(w, op.operands[0])], sweep, until=True)
    stacked = w
    if vectors:
        w = b.one("Slice", [stacked, b.int64s([0]), b.int64s([big]), b.int64s([rank - 2])])
    norms = b.one("Sqrt", [b.one("ReduceSum", [b.one("Mul", [w, w]), b.int64s([rank - 2])], keepdims=0)])
    values, order = b.node("TopK", [norms, b.int64s([small])], 2, axis=-1, largest=1, sorted=1)
    values = b.one("Mul", [values, b.one("Squeeze", [scale, b.int64s([rank - 2])])])
    finite_ = b.one("Squeeze", [finite, b.int64s([rank - 2])])
    values = b.one("Where", [finite_, values, b.scalar(np.nan, dtype)])
    info = b.one("Where", [b.one("Squeeze", [finite_, last]), b.scalar(0, _I32), b.scalar(-4, _I32)])
    if vectors:
        u, vt = jacobi_vectors(b, stacked, order, rank, big, m < n, dtype)
        return [a, values, u, vt, info]
    # U and VT, not computed (LAPACK leaves them as they were): zeros of their static shapes
    u, vt = (b.one("Expand", [zero, b.one("Concat", [batch_shape, b.int64s(
        [d or 0 for d in tensor_shape(r)[-2:]])], axis=0)]) for r in op.results[2:4])
    return [a, values, u, vt, info]


#: The custom calls of this family (the ONNX plan lets them through: ``LAPACK_TRANSLATED``).
CUSTOM_CALLS: dict[str, Translation] = {f"lapack_{t}gesdd_ffi": _gesdd for t in "sd"}

#: No operation of its own: custom calls are the translator's, which looks them up in ``CUSTOM_CALLS``.
TABLE: dict[str, Translation] = {}
