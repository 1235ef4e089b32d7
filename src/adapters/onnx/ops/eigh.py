"""ONNX translation of JAX's LAPACK symmetric eigendecomposition on the CPU, where only its eigenvalues are used.

``jnp.linalg.eigh`` and ``jnp.linalg.eigvalsh`` lower to the custom call
``lapack_{s,d}syevd_ffi`` (results: the eigenvectors, the eigenvalues in
ascending order, ``info``; JAX symmetrizes the matrix first and gives NaN
where ``info`` is not 0). The eigenvalues are a well-conditioned function of
the matrix; the signs of LAPACK's eigenvectors are not: they follow the path
of ``ssteqr``'s implicit QL/QR sweeps (and beyond 25 rows, of divide and
conquer), which rounding changes. A change of one unit in the last place of
one element of a random 20 by 20 matrix flips the sign of some eigenvector of
a well-separated eigenvalue in about a quarter of the cases, in LAPACK
itself, so ONNX operators, which round in their own order, cannot give
LAPACK's signs. So the translation computes the eigenvalues only, and
refuses the call (typed, :data:`~jaxport.domain.targets.onnx.EIGENVECTOR_SIGNS`)
where the eigenvectors are used: JAX's ``eigvalsh`` and ``eigh(...)[0]``
convert, ``eigh``'s vectors do not. In float64, all the batch's matrices at
once:

- the matrix (its lower or upper triangle, as ``uplo`` says) is scaled by its
  largest magnitude and reduced to tridiagonal form by Householder
  reflectors, LAPACK's unblocked ``sytd2`` (one ``Loop`` over the columns);
- each eigenvalue ``k`` of the tridiagonal matrix is found by bisection on
  Sturm counts (as LAPACK's ``stebz``: a pivot smaller than ``pivmin`` counts
  as ``-pivmin``) within the Gershgorin bounds, 40 halvings for float32 and
  60 for float64, and scaled back.

The values are JAX's within ``n * eps * max|A|`` (absolute; a value much
smaller than the matrix's norm has no more relative accuracy in LAPACK
either). A matrix with a NaN or an infinity and more than one row gets
``info = 1``, as LAPACK's iteration fails or its scaling makes NaN there (so
JAX's results are NaN); a 1 by 1 matrix is its own eigenvalue. One difference
remains: a NaN that LAPACK leaves in a block of its own of one or two rows (a
2 by 2 matrix, a diagonal one) gives values that follow LAPACK's branches in
JAX (``[[nan, 1], [1, 2]]``: ``-sqrt(2), sqrt(2)``), NaN here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir

from jaxport.adapters.onnx.builder import BOOL, F32, F64, I32, I64, GraphBuilder, tensor_dtype, tensor_shape
from jaxport.domain.targets.onnx import EIGENVECTOR_SIGNS
from .common import Translation, dim_size, iota_of, is_private, nested, operation
from .lapack import backend_config, swap_last

#: Bisection steps: the Gershgorin interval is at most 6 times the matrix's norm wide, which ``2**-steps`` makes
#: well below the dtype's eps times the norm.
_HALVINGS = {F32: 40, F64: 60}


def _unused(value: Any, depth: int = 0) -> bool:
    """Whether nothing reads ``value``: its readers are operations with results and without regions (no calls,
    custom calls or terminators) whose results nothing reads, or the return of a private function whose calls'
    results nothing reads."""
    if depth > 16:
        return False
    for use in value.uses:
        owner = operation(use.owner)
        if owner.name == "func.return":
            function = operation(owner.parent)
            if not is_private(function):
                return False  # the module's result
            name = ir.StringAttr(function.attributes["sym_name"]).value
            calls = [o for o in nested(operation(function.parent))
                     if o.name == "func.call" and ir.FlatSymbolRefAttr(o.attributes["callee"]).value == name]
            if not all(_unused(call.results[use.operand_number], depth + 1) for call in calls):
                return False
        elif (owner.name in ("func.call", "stablehlo.custom_call") or len(owner.regions) or not len(owner.results)
              or not all(_unused(r, depth + 1) for r in owner.results)):
            return False
    return True


def _tridiagonal(b: GraphBuilder, a: str, rank: int, n: str) -> tuple[str, str]:
    """The diagonal and off-diagonal (``e[n-1] = 0``) of the tridiagonal form of the symmetric ``a``."""
    iota = iota_of(b, n)
    zero, one, last = b.scalar(0, F64), b.scalar(1, F64), b.int64s([-1])
    steps = b.one("Max", [b.one("Sub", [n, b.scalar(1, I64)]), b.scalar(0, I64)])

    def body(c: GraphBuilder, i: str, carried: list[str]) -> list[str]:
        w, e = carried
        below_i = c.one("Add", [i, c.scalar(1, I64)])
        column = c.one("Gather", [w, i], axis=rank - 1)  # (..., n)
        alpha = c.one("Gather", [column, below_i], axis=rank - 2)  # (...)
        x = c.one("Where", [c.one("Greater", [iota, below_i]), column, zero])
        xnorm = c.one("Sqrt", [c.one("ReduceSum", [c.one("Mul", [x, x]), last], keepdims=0)])
        norm = c.one("Sqrt", [c.one("Add", [c.one("Mul", [alpha, alpha]), c.one("Mul", [xnorm, xnorm])])])
        beta = c.one("Where", [c.one("Less", [alpha, zero]), norm, c.one("Neg", [norm])])
        trivial = c.one("Equal", [xnorm, zero])
        tau = c.one("Where", [trivial, zero, c.one("Div", [c.one("Sub", [beta, alpha]), beta])])
        denominator = c.one("Where", [trivial, one, c.one("Sub", [alpha, beta])])
        v = c.one("Where", [c.one("Equal", [iota, below_i]), one,
                            c.one("Div", [x, c.one("Unsqueeze", [denominator, last])])])
        tau_ = c.one("Unsqueeze", [tau, last])
        p = c.one("Mul", [tau_, c.one("Squeeze", [c.one("MatMul", [w, c.one("Unsqueeze", [v, last])]), last])])
        p = c.one("Where", [c.one("Greater", [iota, i]), p, zero])
        half = c.one("Mul", [c.scalar(-0.5, F64), c.one("Mul", [tau_, c.one("ReduceSum", [
            c.one("Mul", [p, v]), last], keepdims=1)])])
        u = c.one("Add", [p, c.one("Mul", [half, v])])
        column_v, column_u = c.one("Unsqueeze", [v, last]), c.one("Unsqueeze", [u, last])
        row_v, row_u = c.one("Unsqueeze", [v, c.int64s([-2])]), c.one("Unsqueeze", [u, c.int64s([-2])])
        w = c.one("Sub", [w, c.one("Add", [c.one("Mul", [column_v, row_u]), c.one("Mul", [column_u, row_v])])])
        e = c.one("Where", [c.one("Equal", [iota, i]), c.one("Unsqueeze", [
            c.one("Where", [trivial, alpha, beta]), last]), e])
        return [w, e]

    e0 = b.one("Expand", [zero, b.one("Shape", [a], start=0, end=rank - 1)])
    w, e = b.loop(steps, [(a, (F64, rank)), (e0, (F64, rank - 1))], body)
    eye = b.one("Equal", [b.one("Unsqueeze", [iota, last]), iota])
    return b.one("ReduceSum", [b.one("Where", [eye, w, zero]), last], keepdims=0), e


def _bisect(b: GraphBuilder, d: str, e: str, rank: int, n: str, halvings: int) -> str:
    """The eigenvalues of the tridiagonal ``(d, e)``, ascending, by bisection on Sturm counts."""
    last, zero = b.int64s([-1]), b.scalar(0, F64)
    e2 = b.one("Mul", [e, e])
    pad = b.one("Slice", [e2, b.int64s([0]), b.int64s([1]), b.int64s([-1])])
    before = b.one("Concat", [b.one("Mul", [pad, zero]), b.one("Slice", [e2, b.int64s([0]), b.int64s([-1]),
                                                                        b.int64s([-1])])], axis=-1)  # e[j-1]**2
    pivmin = b.one("Mul", [b.scalar(np.finfo(np.float64).tiny, F64), b.one("Max", [
        b.scalar(1, F64), b.one("ReduceMax", [e2, last], keepdims=1)])])
    abs_e = b.one("Abs", [e])
    radius = b.one("ReduceMax", [b.one("Add", [b.one("Abs", [d]), b.one("Add", [abs_e, b.one("Sqrt", [before])])]),
                                 last], keepdims=1)
    bound = b.one("Add", [b.one("Mul", [radius, b.scalar(1 + 2.0**-20, F64)]), pivmin])
    hi0 = b.one("Expand", [bound, b.one("Shape", [d])])
    k = b.cast(iota_of(b, n), F64)

    def halve(c: GraphBuilder, _: str, carried: list[str]) -> list[str]:
        lo, hi = carried
        mid = c.one("Mul", [c.one("Add", [lo, hi]), c.scalar(0.5, F64)])

        def sturm(s: GraphBuilder, j: str, state: list[str]) -> list[str]:
            q, count = state
            dj = s.one("Gather", [d, s.one("Unsqueeze", [j, s.int64s([0])])], axis=-1)  # (..., 1)
            ej = s.one("Gather", [before, s.one("Unsqueeze", [j, s.int64s([0])])], axis=-1)
            q = s.one("Sub", [s.one("Sub", [dj, mid]), s.one("Div", [ej, q])])
            q = s.one("Where", [s.one("Less", [s.one("Abs", [q]), pivmin]), s.one("Neg", [pivmin]), q])
            return [q, s.one("Add", [count, s.cast(s.one("Less", [q, s.scalar(0, F64)]), F64)])]

        ones = c.one("Add", [c.one("Mul", [mid, zero]), c.scalar(1, F64)])
        _, count = c.loop(n, [(ones, (F64, rank - 1)), (c.one("Mul", [mid, zero]), (F64, rank - 1))], sturm)
        above = c.one("Greater", [count, k])  # eigenvalue k lies below mid
        return [c.one("Where", [above, lo, mid]), c.one("Where", [above, mid, hi])]

    lo, hi = b.loop(b.scalar(halvings, I64), [(b.one("Neg", [hi0]), (F64, rank - 1)), (hi0, (F64, rank - 1))],
                  halve)
    return b.one("Mul", [b.one("Add", [lo, hi]), b.scalar(0.5, F64)])


def _syevd(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    if not _unused(op.results[0]):
        b.refuse(EIGENVECTOR_SIGNS)
    dtype = tensor_dtype(op.results[1])
    rank = len(tensor_shape(op.operands[0]))
    n = dim_size(b, args[0], rank - 1)
    iota = iota_of(b, n)
    rows, last, both = b.one("Unsqueeze", [iota, b.int64s([-1])]), b.int64s([-1]), b.int64s([-2, -1])
    a = b.cast(args[0], F64)
    transposed = swap_last(b, a, rank)
    upper = backend_config(op).get("uplo", ord("L")) == ord("U")
    a = b.one("Where", [b.one("LessOrEqual" if upper else "GreaterOrEqual", [rows, iota]), a, transposed])
    zero = b.scalar(0, F64)
    bad = b.one("Or", [b.one("IsNaN", [a]), b.one("IsInf", [a])])
    bad = b.cast(b.one("ReduceMax", [b.cast(bad, I32), both], keepdims=1), BOOL)  # (..., 1, 1)
    largest = b.one("ReduceMax", [b.one("Abs", [b.one("Where", [bad, zero, a])]), both], keepdims=1)
    scale = b.one("Where", [b.one("Greater", [largest, zero]), largest, b.scalar(1, F64)])
    scaled = b.one("Where", [bad, zero, b.one("Div", [a, scale])])
    d, e = _tridiagonal(b, scaled, rank, n)
    values = _bisect(b, d, e, rank, n, _HALVINGS.get(dtype, 60))
    values = b.one("Mul", [values, b.one("Squeeze", [scale, last])])
    diagonal = b.one("ReduceSum", [b.one("Where", [b.one("Equal", [rows, iota]), a, zero]), last], keepdims=0)
    single = b.one("Equal", [n, b.scalar(1, I64)])
    values = b.cast(b.one("Where", [single, diagonal, values]), dtype)
    failed = b.one("And", [b.one("Squeeze", [bad, both]), b.one("Not", [single])])
    info = b.cast(failed, I32)
    return [args[0], values, info]


#: The custom calls of this family (the ONNX plan lets them through: ``LAPACK_TRANSLATED``).
CUSTOM_CALLS: dict[str, Translation] = {f"lapack_{t}syevd_ffi": _syevd for t in "sd"}
