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
row are LAPACK's (:func:`_vector_svd`). Of a larger matrix they are computed
by the same sweeps (:func:`_jacobi_vectors`) where the module's results provably
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

from jaxport.adapters.onnx.builder import BOOL, I32, I64, GraphBuilder, tensor_dtype, tensor_shape
from .common import Translation, iota_of
from .lapack import backend_config, swap_last
from .svd_invariance import vectors_invariant

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
            return _vector_svd(b, op, args, m, n, full=mode == ord("A"))
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
    w = swap_last(b, a, rank) if m < n else a
    big, small = max(m, n), min(m, n)
    zero, one = b.scalar(0, dtype), b.scalar(1, dtype)
    axes = b.int64s([rank - 2, rank - 1])
    bad = b.one("Or", [b.one("IsNaN", [a]), b.one("IsInf", [a])])
    finite = b.one("Not", [b.cast(b.one("ReduceMax", [b.cast(bad, I32), axes], keepdims=1), BOOL)])
    scale = b.one("ReduceMax", [b.one("Where", [bad, zero, b.one("Abs", [a])]), axes], keepdims=1)
    scale = b.one("Where", [b.one("Greater", [scale, zero]), scale, one])
    w = b.one("Where", [finite, b.one("Div", [w, scale]), zero])
    if vectors:  # V below the matrix: the rotations of its columns turn V's alike
        eye = b.one("Expand", [b.constant(np.eye(small, dtype=dtype), "svd_eye"), b.one("Concat", [
            b.one("Shape", [a], start=0, end=rank - 2), b.int64s([small, small])], axis=0)])
        w = b.one("Concat", [w, eye], axis=rank - 2)
    pairs = [(p, q) for p in range(small) for q in range(p + 1, small)]
    first = b.constant(np.array([p for p, _ in pairs], I64), "svd_p")
    second = b.constant(np.array([q for _, q in pairs], I64), "svd_q")
    columns = iota_of(b, b.scalar(small, I64))
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
        return [v, c.one("Add", [rotations, c.cast(rotated, I32)])]

    def sweep(c: GraphBuilder, _: str, carried: list[str]) -> list[str]:
        rotations0 = c.one("Expand", [c.scalar(0, I32), batch_shape])
        v, rotations = c.loop(c.scalar(len(pairs), I64), [(carried[0], op.operands[0]), (rotations0, info_type)],
                            rotate)
        total = c.one("ReduceSum", [c.one("Reshape", [rotations, c.int64s([-1])]), c.int64s([0])], keepdims=0)
        return [c.one("Greater", [total, c.scalar(0, I32)]), v]

    if pairs:  # sweeps while one rotated
        (w,) = b.loop(b.scalar(_SWEEPS, I64), [(w, op.operands[0])], sweep, go=b.scalar(True, BOOL))
    stacked = w
    if vectors:
        w = b.one("Slice", [stacked, b.int64s([0]), b.int64s([big]), b.int64s([rank - 2])])
    norms = b.one("Sqrt", [b.one("ReduceSum", [b.one("Mul", [w, w]), b.int64s([rank - 2])], keepdims=0)])
    values, order = b.node("TopK", [norms, b.int64s([small])], 2, axis=-1, largest=1, sorted=1)
    values = b.one("Mul", [values, b.one("Squeeze", [scale, b.int64s([rank - 2])])])
    finite_ = b.one("Squeeze", [finite, b.int64s([rank - 2])])
    values = b.one("Where", [finite_, values, b.scalar(np.nan, dtype)])
    info = b.one("Where", [b.one("Squeeze", [finite_, last]), b.scalar(0, I32), b.scalar(-4, I32)])
    if vectors:
        u, vt = _jacobi_vectors(b, stacked, order, rank, big, m < n, dtype)
        return [a, values, u, vt, info]
    # U and VT, not computed (LAPACK leaves them as they were): zeros of their static shapes
    u, vt = (b.one("Expand", [zero, b.one("Concat", [batch_shape, b.int64s(
        [d or 0 for d in tensor_shape(r)[-2:]])], axis=0)]) for r in op.results[2:4])
    return [a, values, u, vt, info]



def _vector_svd(b: GraphBuilder, op: Any, args: Sequence[str], m: int, n: int, full: bool) -> list[str]:
    """``gesdd``'s results (the input, ``s``, ``U``, ``VT``, ``info``) for ``[..., m, n]`` with ``m`` or ``n`` 1.

    As LAPACK's ``sgesdd`` gives them: no iteration chooses these signs, only one
    Householder reflector (``slarfg``, as :mod:`.lapack`'s ``geqrf``): for an ``m x 1`` column ``a`` ``sgesdd``
    takes the QR path (``sgeqrf``, then ``sbdsdc`` of the 1 x 1 ``R``), for a
    ``1 x n`` row the LQ path; with ``alpha = a[0]``, ``x = a[1:]``:

    - ``x = 0`` (exactly): ``tau = 0``, ``beta = alpha``, ``H = I``;
    - else ``beta = -sign(alpha) * hypot(alpha, |x|)`` (a negative zero counts
      as negative, as Fortran's ``SIGN``), ``tau = (beta - alpha) / beta``,
      ``v = (1, x / (alpha - beta))``, ``H = I - tau v v^T``;
    - ``s = |beta|`` and ``sbdsdc``'s sign ``d = SIGN(1, beta)``; the column's
      ``U`` is ``H`` with its first column times ``d``, ``VT = [[1]]``; the
      row's ``U = [[d]]``, ``VT = H``. ``full_matrices=False`` keeps ``U``'s
      first column (``VT``'s first row).

    An infinity reaches LAPACK's scaling by zero (``inf * 0``, x86's default
    NaN, whose sign bit is set), which the results follow: ``s`` is NaN; an
    infinity in ``x`` makes the column's ``U`` (the row's ``VT``) NaN and the
    row's ``U`` ``-SIGN(1, alpha * 0)``; one at ``alpha`` alone leaves ``H = I``
    and ``d = -1``. A NaN sets ``info = -4`` (JAX returns NaN).
    """
    rank = len(tensor_shape(op.operands[0]))
    wide, k = m < n, max(m, n)
    dtype = tensor_dtype(op.results[1])
    a = args[0]
    last, pair = b.int64s([-1]), b.int64s([-2, -1])
    vec = b.one("Squeeze", [a, b.int64s([rank - 2 if wide else rank - 1])])  # (..., k)
    first = b.constant(np.arange(k) == 0, "first")
    zero, one, nan = b.scalar(0, dtype), b.scalar(1, dtype), b.scalar(np.nan, dtype)
    minus = b.scalar(-1, dtype)

    def any_of(mask: str) -> str:
        return b.one("Greater", [b.one("ReduceMax", [b.cast(mask, I32), last], keepdims=0), b.scalar(0, I32)])

    infinite, not_a_number = b.one("IsInf", [vec]), b.one("IsNaN", [vec])
    inf_x = any_of(b.one("And", [infinite, b.one("Not", [first])]))
    inf_alpha = b.one("IsInf", [b.one("Gather", [vec, b.scalar(0, I64)], axis=rank - 2)])
    clean = b.one("Where", [b.one("Or", [infinite, not_a_number]), zero, vec])
    alpha = b.one("Gather", [clean, b.scalar(0, I64)], axis=rank - 2)  # (...)
    x = b.one("Where", [first, zero, clean])
    trivial = b.one("Not", [any_of(b.one("Not", [b.one("Equal", [x, zero])]))])
    scale = b.one("ReduceMax", [b.one("Abs", [clean]), last], keepdims=0)
    scale = b.one("Where", [b.one("Greater", [scale, zero]), scale, one])
    alpha_s, x_s = b.one("Div", [alpha, scale]), b.one("Div", [x, b.one("Unsqueeze", [scale, last])])
    norm_s = b.one("Sqrt", [b.one("Add", [b.one("Mul", [alpha_s, alpha_s]), b.one("ReduceSum", [
        b.one("Mul", [x_s, x_s]), last], keepdims=0)])])
    # -0.0 too, as Fortran's SIGN (read from the input: ONNX Runtime's Where may turn a -0.0 into +0.0)
    negative = b.one("Less", [b.one("Div", [one, b.one("Gather", [vec, b.scalar(0, I64)],
                                                       axis=rank - 2)]), zero])
    beta_s = b.one("Where", [negative, norm_s, b.one("Neg", [norm_s])])
    tau = b.one("Where", [trivial, zero, b.one("Div", [b.one("Sub", [beta_s, alpha_s]), beta_s])])
    below = b.one("Div", [x_s, b.one("Unsqueeze", [b.one("Sub", [alpha_s, beta_s]), last])])
    v = b.one("Where", [first, one, b.one("Where", [b.one("Unsqueeze", [trivial, last]), zero, below])])
    beta = b.one("Where", [trivial, alpha, b.one("Mul", [beta_s, scale])])
    sign = b.one("Where", [b.one("Or", [b.one("And", [trivial, negative]), b.one("And", [
        b.one("Not", [trivial]), b.one("Less", [beta_s, zero])])]), minus, one])
    eye = b.constant(np.eye(k, dtype=dtype), "eye")
    outer = b.one("Mul", [b.one("Unsqueeze", [v, last]), b.one("Unsqueeze", [v, b.int64s([-2])])])
    h = b.one("Sub", [eye, b.one("Mul", [b.one("Unsqueeze", [tau, pair]), outer])])
    h = b.one("Where", [b.one("Unsqueeze", [inf_x, pair]), nan, b.one("Where", [
        b.one("Unsqueeze", [inf_alpha, pair]), eye, h])])
    broken = b.one("Or", [inf_x, inf_alpha])
    values = b.one("Unsqueeze", [b.one("Where", [broken, nan, b.one("Abs", [beta])]), last])
    keep = b.int64s([1])
    if wide:  # U = [[d]], VT = H
        # an infinity in x: -SIGN(1, alpha * 0) (alpha an infinity too: its NaN, whose sign bit is set)
        from_x = b.one("Where", [inf_alpha, one, b.one("Where", [negative, one, minus])])
        d = b.one("Where", [inf_x, from_x, b.one("Where", [inf_alpha, minus, sign])])
        u = b.one("Unsqueeze", [d, pair])
        vt = h if full else b.one("Slice", [h, b.int64s([0]), keep, b.int64s([rank - 2])])
    else:  # U = H with its first column times d, VT = [[1]]
        d = b.one("Where", [inf_alpha, minus, sign])
        columns = b.one("Where", [first, b.one("Unsqueeze", [d, last]), one])  # (..., k)
        u = b.one("Mul", [h, b.one("Unsqueeze", [columns, b.int64s([-2])])])
        u = u if full else b.one("Slice", [u, b.int64s([0]), keep, b.int64s([rank - 1])])
        vt = b.one("Expand", [one, b.one("Concat", [b.one("Shape", [a], start=0, end=rank - 2), b.int64s([1, 1])],
                                         axis=0)])
    info = b.one("Where", [any_of(not_a_number), b.scalar(-4, I32), b.scalar(0, I32)])
    return [a, values, u, vt, info]


def _jacobi_vectors(b: GraphBuilder, stacked: str, order: str, rank: int, big: int, wide: bool,
                   dtype: np.dtype[Any]) -> tuple[str, str]:
    """``U`` and ``VT`` from the sweeps' ``[W; V]`` (``stacked``, ``[..., big + k, k]``) and the values' ``order``
    (``[..., k]``, TopK's indices).

    Used only where :func:`.svd_invariance.vectors_invariant` proves that the
    module's results do not change under ``U -> U Q``, ``VT -> Q^T VT`` (``Q``
    orthogonal and commuting with ``diag(s)``) nor with the columns of
    ``s_i = 0`` (``pinv``, ``lstsq``): any accurate vectors then give LAPACK's
    results up to rounding. The Jacobi sweeps rotate the columns of the (scaled)
    matrix ``W`` and, alike, those of ``V`` (starting from the identity), so that
    ``W_final = W V`` has orthogonal columns of norms ``s``:

    - the columns are put in the order of the values, largest first (LAPACK's);
    - ``U``'s column ``i`` is ``W_final``'s divided by its norm, computed on the
      column divided by its largest magnitude (no underflow of the squares); a
      column of zeros (``s_i = 0``) stays zeros: finite, and the proof requires
      that the results multiply it by zero;
    - a wide matrix was transposed: its ``U`` is the sweeps' ``V`` and its
      ``VT`` the transpose of their ``U``.
    """
    rows = rank - 2
    index = b.one("Expand", [b.one("Unsqueeze", [order, b.int64s([rows])]), b.one("Shape", [stacked])])
    ordered = b.one("GatherElements", [stacked, index], axis=rank - 1)
    w = b.one("Slice", [ordered, b.int64s([0]), b.int64s([big]), b.int64s([rows])])
    v = b.one("Slice", [ordered, b.int64s([big]), b.int64s([np.iinfo(np.int64).max]), b.int64s([rows])])
    axis = b.int64s([rows])
    largest = b.one("ReduceMax", [b.one("Abs", [w]), axis], keepdims=1)
    one = b.scalar(1, dtype)
    empty = b.one("Equal", [largest, b.scalar(0, dtype)])
    t = b.one("Div", [w, b.one("Where", [empty, one, largest])])
    norm = b.one("Sqrt", [b.one("ReduceSum", [b.one("Mul", [t, t]), axis], keepdims=1)])
    u = b.one("Div", [t, b.one("Where", [empty, one, norm])])
    return (v, swap_last(b, u, rank)) if wide else (u, swap_last(b, v, rank))


#: The custom calls of this family (the ONNX plan lets them through: ``LAPACK_TRANSLATED``).
CUSTOM_CALLS: dict[str, Translation] = {f"lapack_{t}gesdd_ffi": _gesdd for t in "sd"}
