"""ONNX translations of JAX's LAPACK kernels on the CPU: Cholesky, triangular solve, LU with partial pivoting,
QR (Householder), tridiagonal solve.

JAX lowers ``jnp.linalg.cholesky``, ``lax.linalg.triangular_solve``,
``lax.linalg.lu`` (``jnp.linalg.solve``, ``inv``, ``det``, ``slogdet``),
``jnp.linalg.qr`` and ``lax.linalg.tridiagonal_solve`` on the CPU to custom
calls of LAPACK (``lapack_{s,d}potrf_ffi``, ``..trsm_ffi``, ``..getrf_ffi``,
``..geqrf_ffi`` then ``..orgqr_ffi``, ``..gtsv_ffi``), batched over leading
dimensions. Each becomes one ONNX ``Loop`` (``gtsv``: two) over the columns
(or rows) of the matrices, all batches at once, with the standard operators
only:

- ``potrf`` (lower or upper) computes the factor column by column, as
  LAPACK's unblocked ``potf2``: ``info`` is the first column whose pivot is
  not positive (or NaN), plus one, or 0; the other triangle keeps the
  input's, as LAPACK leaves it (JAX masks the result with ``info``).
- ``trsm`` (either side, either triangle, transposed or not, unit diagonal
  or not) is a forward substitution on the lower-triangular form (a right
  side solved transposed, an upper triangle reversed); the other triangle
  of the matrix is never read, as LAPACK's.
- ``getrf`` (rectangular too) is ``getf2``'s: the pivot is the first row of
  largest magnitude at or below the diagonal, the rows are swapped across
  the whole matrix, the column below is scaled by the pivot's reciprocal
  (divided where that is below float's smallest normal), and the trailing
  matrix updated; a zero pivot leaves its column unscaled and sets
  ``info``. The pivots are LAPACK's, one-based.
- ``geqrf`` is LAPACK's unblocked ``geqr2``: for each column ``j`` the
  reflector ``slarfg`` makes from ``alpha = A[j, j]`` and ``x = A[j+1:, j]``:
  ``beta = -sign(alpha) * hypot(alpha, |x|)`` (a negative zero counts as
  negative, as Fortran's ``SIGN``), ``tau = (beta - alpha) / beta`` and
  ``v = x / (alpha - beta)`` (by the reciprocal, as LAPACK scales); a zero
  ``x`` gives ``tau = 0`` and leaves ``alpha``. The reflector is applied to
  the trailing columns. So R's diagonal and Q's columns have LAPACK's
  signs, the convention ``jnp.linalg.qr`` returns. LAPACK's rescaling of
  reflectors whose ``beta`` is below float's smallest normal is not
  reproduced (it changes no result beyond rounding).
- ``orgqr`` applies the reflectors ``H_k ... H_1`` in turn, from the last, to
  the first columns of the identity: ``Q = H_1 ... H_k I``.
- ``gtsv`` (JAX passes the subdiagonal from its second element, ``dl[0]``
  being unused) is LAPACK's own steps: Gaussian elimination with partial
  pivoting between adjacent rows (rows ``i`` and ``i + 1`` swap where
  ``|d[i]| < |dl[i]|``, a NaN included, as Fortran's
  ``ABS(D(I)).GE.ABS(DL(I))`` is false), the fill-in kept as a second
  superdiagonal in ``dl``, then back substitution. ``info`` is the first
  zero pivot, plus one, as LAPACK's (JAX gives NaN there); the factors it
  returns are LAPACK's modified diagonals, up to rounding.

The results equal LAPACK's up to the rounding of a different order of
operations (blocked LAPACK sums and applies the reflectors in another
order): float32 tolerance on well-conditioned matrices; on ill-conditioned
ones the difference grows with the condition number, and an LU whose two
candidate pivots are equal up to rounding may pick the other row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir

from jaxport.adapters.onnx.builder import I32, I64, GraphBuilder, tensor_dtype, tensor_shape
from jaxport.domain.targets.onnx import LAPACK_TRANSLATED
from .common import Translation, dim_size, iota_of, put, reversed_along



def backend_config(op: Any) -> dict[str, int]:
    """The custom call's ``mhlo.backend_config`` (LAPACK's character flags as their codes)."""
    if "mhlo.backend_config" not in op.attributes:
        return {}
    config = ir.DictAttr(op.attributes["mhlo.backend_config"])
    return {config[i].name: int(ir.IntegerAttr(config[i].attr).value) for i in range(len(config))}


def _zeros(b: GraphBuilder, like: str, dtype: np.dtype[Any], end: int | None = None) -> str:
    """Zeros of ``dtype`` shaped as ``like`` (its dimensions up to ``end``)."""
    shape = b.one("Shape", [like]) if end is None else b.one("Shape", [like], start=0, end=end)
    return b.one("Expand", [b.scalar(0, dtype), shape])


def swap_last(b: GraphBuilder, x: str, rank: int) -> str:
    """``x`` (of ``rank``) with its last two dimensions swapped: its matrices transposed."""
    return b.one("Transpose", [x], perm=[*range(rank - 2), rank - 1, rank - 2])


def _potrf(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    dtype = tensor_dtype(op.results[0])
    rank = len(tensor_shape(op.operands[0]))
    upper = backend_config(op).get("uplo", ord("L")) == ord("U")
    a = swap_last(b, args[0], rank) if upper else args[0]
    n = dim_size(b, a, rank - 1)
    iota = iota_of(b, n)
    zero = b.scalar(0, dtype)

    def body(c: GraphBuilder, j: str, carried: list[str]) -> list[str]:
        factor, info = carried
        row = c.one("Gather", [factor, j], axis=rank - 2)
        done = c.one("Squeeze", [c.one("MatMul", [factor, c.one("Unsqueeze", [row, c.int64s([-1])])]),
                                 c.int64s([-1])])
        v = c.one("Sub", [c.one("Gather", [a, j], axis=rank - 1), done])
        pivot = c.one("Gather", [v, j], axis=rank - 2)
        root = c.one("Unsqueeze", [c.one("Sqrt", [pivot]), c.int64s([-1])])
        column = c.one("Where", [c.one("Greater", [iota, j]), c.one("Div", [v, root]),
                                 c.one("Where", [c.one("Equal", [iota, j]), root, zero])])
        factor = put(c, factor, iota, j, column)
        failed = c.one("And", [c.one("Not", [c.one("Greater", [pivot, zero])]),
                               c.one("Equal", [info, c.scalar(0, I32)])])
        step = c.cast(c.one("Add", [j, c.scalar(1, I64)]), I32)
        return [factor, c.one("Where", [failed, step, info])]

    factor, info = b.loop(n, [(_zeros(b, a, dtype), op.results[0]),
                                (_zeros(b, a, I32, rank - 2), op.results[1])], body)
    lower = b.one("GreaterOrEqual", [b.one("Unsqueeze", [iota, b.int64s([-1])]), iota])
    result = b.one("Where", [lower, factor, a])
    return [swap_last(b, result, rank) if upper else result, info]


def _trsm(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    config = backend_config(op)
    dtype = tensor_dtype(op.results[0])
    rank = len(tensor_shape(op.operands[0]))
    if len(tensor_shape(op.operands[1])) != rank:
        b.refuse("a triangular solve whose right-hand side has other batch dimensions")
    right = config.get("side", ord("L")) == ord("R")
    transposed = config.get("trans_x", ord("N")) in (ord("T"), ord("C"))
    lower = (config.get("uplo", ord("L")) == ord("L")) != (transposed != right)
    unit = config.get("diag", ord("N")) == ord("U")
    m = swap_last(b, args[0], rank) if transposed != right else args[0]
    rhs = swap_last(b, args[1], rank) if right else args[1]
    if not lower:  # P M P is lower for the reversal P; solve (P M P)(P X) = P B
        m = reversed_along(b, m, [rank - 2, rank - 1])
        rhs = reversed_along(b, rhs, [rank - 2])
    k = dim_size(b, m, rank - 1)
    iota = iota_of(b, k)
    rows = b.one("Unsqueeze", [iota, b.int64s([-1])])
    zero = b.scalar(0, dtype)
    strict = b.one("Where", [b.one("Greater", [rows, iota]), m, zero])
    diagonal = b.one("ReduceSum", [b.one("Where", [b.one("Equal", [rows, iota]), m, zero]), b.int64s([-1])],
                     keepdims=0)

    def body(c: GraphBuilder, i: str, carried: list[str]) -> list[str]:
        (x,) = carried
        row = c.one("Unsqueeze", [c.one("Gather", [strict, i], axis=rank - 2), c.int64s([-2])])
        done = c.one("Squeeze", [c.one("MatMul", [row, x]), c.int64s([-2])])
        xi = c.one("Sub", [c.one("Gather", [rhs, i], axis=rank - 2), done])
        if not unit:
            xi = c.one("Div", [xi, c.one("Unsqueeze", [c.one("Gather", [diagonal, i], axis=rank - 2),
                                                      c.int64s([-1])])])
        return [c.one("Where", [c.one("Equal", [rows, i]), c.one("Unsqueeze", [xi, c.int64s([-2])]), x])]

    carried = _zeros(b, rhs, dtype)
    (x,) = b.loop(k, [(carried, op.results[0])], body)
    if not lower:
        x = reversed_along(b, x, [rank - 2])
    return [swap_last(b, x, rank) if right else x]


def factor_steps(b: GraphBuilder, op: Any, a: str) -> tuple[np.dtype[Any], int, str, str, str, str]:
    """For a factorization ``op`` of the ``[..., m, n]`` matrices ``a``: its result dtype, their rank,
    ``min(m, n)`` (the steps) as an int64 scalar, and the iotas of the rows, the columns and the steps."""
    rank = len(tensor_shape(op.operands[0]))
    m, n = dim_size(b, a, rank - 2), dim_size(b, a, rank - 1)
    steps = b.one("Min", [m, n])
    return tensor_dtype(op.results[0]), rank, steps, iota_of(b, m), iota_of(b, n), iota_of(b, steps)


def per_step(b: GraphBuilder, value: str, a: str, rank: int, steps: str) -> str:
    """``value`` (a scalar) for each of the ``steps`` of each of ``a``'s matrices: ``[..., steps]``."""
    return b.one("Expand", [value, b.one("Concat", [
        b.one("Shape", [a], start=0, end=rank - 2), b.one("Unsqueeze", [steps, b.int64s([0])])], axis=0)])


def _getrf(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    a = args[0]
    dtype, rank, steps, row_iota, col_iota, step_iota = factor_steps(b, op, a)
    rows = b.one("Unsqueeze", [row_iota, b.int64s([-1])])
    zero, tiny = b.scalar(0, dtype), b.scalar(np.finfo(dtype).tiny, dtype)
    last = b.int64s([-1])

    def body(c: GraphBuilder, j: str, carried: list[str]) -> list[str]:
        w, pivots, info = carried
        column = c.one("Gather", [w, j], axis=rank - 1)
        candidates = c.one("Where", [c.one("GreaterOrEqual", [row_iota, j]), c.one("Abs", [column]),
                                     c.scalar(-1, dtype)])
        p = c.one("ArgMax", [candidates], axis=-1, keepdims=1, select_last_index=0)  # (..., 1)
        index = c.one("Expand", [c.one("Unsqueeze", [p, last]), c.one("Concat", [
            c.one("Shape", [w], start=0, end=rank - 2), c.int64s([1]), c.one("Shape", [w], start=rank - 1)],
            axis=0)])
        row_p = c.one("GatherElements", [w, index], axis=rank - 2)  # (..., 1, n)
        row_j = c.one("Unsqueeze", [c.one("Gather", [w, j], axis=rank - 2), c.int64s([-2])])
        is_p = c.one("Unsqueeze", [c.one("Equal", [row_iota, p]), last])
        w = c.one("Where", [c.one("Equal", [rows, j]), row_p, c.one("Where", [is_p, row_j, w])])
        step = c.cast(c.one("Add", [p, c.scalar(1, I64)]), I32)
        pivots = c.one("Where", [c.one("Equal", [step_iota, j]), step, pivots])
        pivot = c.one("Gather", [c.one("Squeeze", [row_p, c.int64s([-2])]), j], axis=rank - 2)
        nonzero = c.one("Not", [c.one("Equal", [pivot, zero])])
        first = c.one("And", [c.one("Not", [nonzero]), c.one("Equal", [info, c.scalar(0, I32)])])
        info = c.one("Where", [first, c.cast(c.one("Add", [j, c.scalar(1, I64)]), I32), info])
        column = c.one("Gather", [w, j], axis=rank - 1)
        pivot_ = c.one("Unsqueeze", [pivot, last])
        scaled = c.one("Where", [c.one("GreaterOrEqual", [c.one("Abs", [pivot_]), tiny]),
                                 c.one("Mul", [column, c.one("Reciprocal", [pivot_])]), c.one("Div", [column, pivot_])])
        below = c.one("Greater", [row_iota, j])
        column = c.one("Where", [c.one("And", [below, c.one("Unsqueeze", [nonzero, last])]), scaled, column])
        u = c.one("Gather", [w, j], axis=rank - 2)
        update = c.one("Mul", [c.one("Unsqueeze", [column, last]), c.one("Unsqueeze", [u, c.int64s([-2])])])
        trailing = c.one("And", [c.one("Unsqueeze", [below, last]), c.one("Greater", [col_iota, j])])
        w = c.one("Where", [trailing, c.one("Sub", [w, update]), w])
        return [put(c, w, col_iota, j, column), pivots, info]

    pivots0 = per_step(b, b.scalar(0, I32), a, rank, steps)
    return b.loop(steps, [(a, op.results[0]), (pivots0, op.results[1]),
                            (_zeros(b, a, I32, rank - 2), op.results[2])], body)


def _geqrf(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    a = args[0]
    dtype, rank, steps, row_iota, col_iota, step_iota = factor_steps(b, op, a)
    zero, one = b.scalar(0, dtype), b.scalar(1, dtype)
    last, before_last = b.int64s([-1]), b.int64s([-2])

    def body(c: GraphBuilder, j: str, carried: list[str]) -> list[str]:
        w, taus = carried
        column = c.one("Gather", [w, j], axis=rank - 1)  # (..., m)
        alpha = c.one("Gather", [column, j], axis=rank - 2)  # (...)
        below = c.one("Greater", [row_iota, j])
        x = c.one("Where", [below, column, zero])
        xnorm = c.one("Sqrt", [c.one("ReduceSum", [c.one("Mul", [x, x]), last], keepdims=0)])
        big = c.one("Max", [c.one("Abs", [alpha]), xnorm])
        small = c.one("Min", [c.one("Abs", [alpha]), xnorm])
        ratio = c.one("Div", [small, big])
        norm = c.one("Where", [c.one("Equal", [small, zero]), big, c.one("Mul", [big, c.one("Sqrt", [
            c.one("Add", [one, c.one("Mul", [ratio, ratio])])])])])
        negative = c.one("Less", [c.one("Div", [one, alpha]), zero])  # -0.0 too, as Fortran's SIGN
        beta = c.one("Where", [negative, norm, c.one("Neg", [norm])])
        trivial = c.one("Equal", [xnorm, zero])
        tau = c.one("Where", [trivial, zero, c.one("Div", [c.one("Sub", [beta, alpha]), beta])])
        scale = c.one("Reciprocal", [c.one("Sub", [alpha, beta])])
        v_below = c.one("Where", [c.one("Unsqueeze", [trivial, last]), x,
                                  c.one("Mul", [x, c.one("Unsqueeze", [scale, last])])])
        diagonal = c.one("Where", [trivial, alpha, beta])
        is_j = c.one("Equal", [row_iota, j])
        v = c.one("Where", [is_j, one, v_below])  # (..., m), zeros above j
        update = _reflection(c, v, tau, w, last, before_last)
        w = c.one("Where", [c.one("Greater", [col_iota, j]), c.one("Sub", [w, update]), w])
        new_column = c.one("Where", [below, v_below, c.one("Where", [
            is_j, c.one("Unsqueeze", [diagonal, last]), column])])
        return [put(c, w, col_iota, j, new_column), put(c, taus, step_iota, j, tau)]

    return b.loop(steps, [(a, op.results[0]), (per_step(b, zero, a, rank, steps), op.results[1])], body)


def _reflection(b: GraphBuilder, v: str, tau: str, w: str, last: str, before_last: str) -> str:
    """What the reflector ``I - tau v v^T`` (``v``: ``[..., m]``, ``tau``: ``[...]``) takes from the matrices
    ``w``: ``tau v (v^T w)`` (``last``, ``before_last``: the axes -1 and -2)."""
    products = b.one("Squeeze", [b.one("MatMul", [b.one("Unsqueeze", [v, before_last]), w]), before_last])
    return b.one("Mul", [b.one("Unsqueeze", [b.one("Mul", [v, b.one("Unsqueeze", [tau, last])]), last]),
                         b.one("Unsqueeze", [products, before_last])])


def _orgqr(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    dtype = tensor_dtype(op.results[0])
    rank = len(tensor_shape(op.operands[0]))
    a, taus = args[:2]  # then, with symbolic shapes, the result's shape
    m, n = dim_size(b, a, rank - 2), dim_size(b, a, rank - 1)
    k = dim_size(b, taus, rank - 2)
    row_iota, col_iota = iota_of(b, m), iota_of(b, n)
    rows = b.one("Unsqueeze", [row_iota, b.int64s([-1])])
    zero, one = b.scalar(0, dtype), b.scalar(1, dtype)
    identity = b.one("Expand", [b.one("Where", [b.one("Equal", [rows, col_iota]), one, zero]), b.one("Shape", [a])])
    last, before_last = b.int64s([-1]), b.int64s([-2])

    def body(c: GraphBuilder, t: str, carried: list[str]) -> list[str]:
        (q,) = carried
        i = c.one("Sub", [c.one("Sub", [k, c.scalar(1, I64)]), t])
        column = c.one("Gather", [a, i], axis=rank - 1)
        v = c.one("Where", [c.one("Greater", [row_iota, i]), column,
                            c.one("Where", [c.one("Equal", [row_iota, i]), one, zero])])
        tau = c.one("Gather", [taus, i], axis=rank - 2)
        return [c.one("Sub", [q, _reflection(c, v, tau, q, last, before_last)])]

    return b.loop(k, [(identity, op.results[0])], body)


def _gtsv(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    dtype = tensor_dtype(op.results[0])
    rank = len(tensor_shape(op.operands[1]))  # (..., n)
    dl_in, d, du, rhs = args[:4]
    n = dim_size(b, d, rank - 1)
    iota = iota_of(b, n)
    rows = b.one("Unsqueeze", [iota, b.int64s([-1])])
    zero, last = b.scalar(0, dtype), b.int64s([-1])
    one64 = b.scalar(1, I64)
    # LAPACK's DL(1..n-1) is JAX's dl[1:]; padded with one zero to n
    pad = b.one("Expand", [zero, b.one("Concat", [b.one("Shape", [d], start=0, end=rank - 1), b.int64s([1])], axis=0)])
    sub = b.one("Concat", [b.one("Slice", [dl_in, b.int64s([1]), b.int64s([np.iinfo(np.int64).max]),
                                           b.int64s([rank - 1])]), pad], axis=rank - 1)
    steps = b.one("Max", [b.one("Sub", [n, one64]), b.scalar(0, I64)])

    def eliminate(c: GraphBuilder, i: str, carried: list[str]) -> list[str]:
        l_, d_, u_, x, info = carried
        j = c.one("Add", [i, one64])
        final = c.one("Equal", [j, c.one("Sub", [n, one64])])
        di, li, ui = (c.one("Gather", [v, i], axis=rank - 1) for v in (d_, l_, u_))
        dj, uj = c.one("Gather", [d_, j], axis=rank - 1), c.one("Gather", [u_, j], axis=rank - 1)
        uj = c.one("Where", [final, zero, uj])
        xi, xj = c.one("Gather", [x, i], axis=rank - 1), c.one("Gather", [x, j], axis=rank - 1)
        keep = c.one("GreaterOrEqual", [c.one("Abs", [di]), c.one("Abs", [li])])
        failed = c.one("And", [c.one("And", [keep, c.one("Equal", [di, zero])]),
                               c.one("Equal", [info, c.scalar(0, I32)])])
        info = c.one("Where", [failed, c.cast(j, I32), info])
        fact = c.one("Where", [keep, c.one("Div", [li, di]), c.one("Div", [di, li])])
        fact_ = c.one("Unsqueeze", [fact, last])
        new_di = c.one("Where", [keep, di, li])
        new_dj = c.one("Where", [keep, c.one("Sub", [dj, c.one("Mul", [fact, ui])]),
                                 c.one("Sub", [ui, c.one("Mul", [fact, dj])])])
        new_li = c.one("Where", [keep, c.one("Where", [final, li, zero]), c.one("Where", [final, li, uj])])
        new_ui = c.one("Where", [keep, ui, dj])
        new_uj = c.one("Where", [c.one("Or", [keep, final]), uj, c.one("Neg", [c.one("Mul", [fact, uj])])])
        keep_ = c.one("Unsqueeze", [keep, last])
        new_xi = c.one("Where", [keep_, xi, xj])
        new_xj = c.one("Where", [keep_, c.one("Sub", [xj, c.one("Mul", [fact_, xi])]),
                                 c.one("Sub", [xi, c.one("Mul", [fact_, xj])])])
        d_ = put(c, put(c, d_, iota, i, new_di), iota, j, new_dj)
        u_i = put(c, u_, iota, i, new_ui)
        u_ = c.one("Where", [final, u_i, put(c, u_i, iota, j, new_uj)])
        l_ = put(c, l_, iota, i, new_li)
        x = put(c, put(c, x, rows, i, new_xi, -2), rows, j, new_xj, -2)
        return [l_, d_, u_, x, info]

    info0 = b.one("Expand", [b.scalar(0, I32), b.one("Shape", [d], start=0, end=rank - 1)])
    l_, d_, u_, x, info = b.loop(steps, [(sub, op.results[0]), (d, op.results[1]), (du, op.results[2]),
                                          (rhs, op.results[3]), (info0, op.results[4])], body=eliminate)
    last_zero = b.one("ReduceMax", [b.cast(b.one("And", [b.one("Equal", [iota, b.one("Sub", [n, one64])]),
                                                           b.one("Equal", [d_, zero])]), I32), last], keepdims=0)
    info = b.one("Where", [b.one("And", [b.one("Greater", [last_zero, b.scalar(0, I32)]),
                                         b.one("Equal", [info, b.scalar(0, I32)])]), b.cast(n, I32), info])

    def substitute(c: GraphBuilder, t: str, carried: list[str]) -> list[str]:
        (y,) = carried
        i = c.one("Sub", [c.one("Sub", [n, one64]), t])
        top = c.one("Sub", [n, one64])
        j, k = c.one("Min", [c.one("Add", [i, one64]), top]), c.one("Min", [c.one("Add", [i, c.scalar(2, I64)]), top])
        yj = c.one("Where", [c.one("Less", [c.one("Add", [i, one64]), n]), c.one("Gather", [y, j], axis=rank - 1),
                             zero])
        yk = c.one("Where", [c.one("Less", [c.one("Add", [i, c.scalar(2, I64)]), n]),
                             c.one("Gather", [y, k], axis=rank - 1), zero])
        ui, li, di = (c.one("Unsqueeze", [c.one("Gather", [v, i], axis=rank - 1), last]) for v in (u_, l_, d_))
        yi = c.one("Sub", [c.one("Sub", [c.one("Gather", [y, i], axis=rank - 1), c.one("Mul", [ui, yj])]),
                           c.one("Mul", [li, yk])])
        return [put(c, y, rows, i, c.one("Div", [yi, di]), -2)]

    (x,) = b.loop(n, [(x, op.results[3])], substitute)
    dl_out = b.one("Concat", [b.one("Slice", [dl_in, b.int64s([0]), b.int64s([1]), b.int64s([rank - 1])]),
                              b.one("Slice", [l_, b.int64s([0]), b.int64s([-1]), b.int64s([rank - 1])])],
                   axis=rank - 1)
    return [dl_out, d_, u_, x, info]


_KERNELS: dict[str, Translation] = {"potrf": _potrf, "trsm": _trsm, "getrf": _getrf, "geqrf": _geqrf,
                                    "orgqr": _orgqr, "gtsv": _gtsv}

#: The ONNX target's plan lets these through (:data:`jaxport.domain.targets.onnx.LAPACK_TRANSLATED`; the
#: eigenvalues' and singular values' are :mod:`.eigh`'s and :mod:`.svd`'s).
CUSTOM_CALLS: dict[str, Translation] = {
    target: _KERNELS[target[len("lapack_s"):-len("_ffi")]] for target in sorted(LAPACK_TRANSLATED)
    if target[len("lapack_s"):-len("_ffi")] in _KERNELS}
