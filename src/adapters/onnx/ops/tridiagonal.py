"""ONNX translation of JAX's LAPACK tridiagonal solve on the CPU: ``lapack_{s,d}gtsv_ffi``.

``lax.linalg.tridiagonal_solve`` lowers to LAPACK's ``gtsv`` (JAX passes
the subdiagonal from its second element, ``dl[0]`` being unused). It
becomes two ONNX ``Loop``s over all the batch's systems, LAPACK's own steps:
Gaussian elimination with partial pivoting between adjacent rows (rows
``i`` and ``i + 1`` swap where ``|d[i]| < |dl[i]|``, a NaN included, as
Fortran's ``ABS(D(I)).GE.ABS(DL(I))`` is false), the fill-in kept as a
second superdiagonal in ``dl``, then back substitution. ``info`` is the
first zero pivot, plus one, as LAPACK's (JAX gives NaN there); the factors
it returns are LAPACK's modified diagonals, up to rounding.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxport.adapters.onnx.builder import I32, I64, GraphBuilder, tensor_dtype, tensor_shape
from .common import Translation, dim_size, iota_of, put



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


#: The custom calls of this family (the ONNX plan lets them through: ``LAPACK_TRANSLATED``).
CUSTOM_CALLS: dict[str, Translation] = {f"lapack_{t}gtsv_ffi": _gtsv for t in "sd"}
