"""The SVD with its vectors of a single column or row (``min(m, n) = 1``), as LAPACK's ``sgesdd`` gives it.

No iteration chooses these signs, only one Householder reflector
(``slarfg``, as :mod:`.qr`'s): for an ``m x 1`` column ``a`` ``sgesdd``
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

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxport.adapters.onnx.builder import GraphBuilder, tensor_dtype, tensor_shape
from .common import Translation

_I32 = np.dtype(np.int32)


def vector_svd(b: GraphBuilder, op: Any, args: Sequence[str], m: int, n: int, full: bool) -> list[str]:
    """``gesdd``'s results (the input, ``s``, ``U``, ``VT``, ``info``) for ``[..., m, n]`` with ``m`` or ``n`` 1."""
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
        return b.one("Greater", [b.one("ReduceMax", [b.cast(mask, _I32), last], keepdims=0), b.scalar(0, _I32)])

    infinite, not_a_number = b.one("IsInf", [vec]), b.one("IsNaN", [vec])
    inf_x = any_of(b.one("And", [infinite, b.one("Not", [first])]))
    inf_alpha = b.one("IsInf", [b.one("Gather", [vec, b.scalar(0, np.dtype(np.int64))], axis=rank - 2)])
    clean = b.one("Where", [b.one("Or", [infinite, not_a_number]), zero, vec])
    alpha = b.one("Gather", [clean, b.scalar(0, np.dtype(np.int64))], axis=rank - 2)  # (...)
    x = b.one("Where", [first, zero, clean])
    trivial = b.one("Not", [any_of(b.one("Not", [b.one("Equal", [x, zero])]))])
    scale = b.one("ReduceMax", [b.one("Abs", [clean]), last], keepdims=0)
    scale = b.one("Where", [b.one("Greater", [scale, zero]), scale, one])
    alpha_s, x_s = b.one("Div", [alpha, scale]), b.one("Div", [x, b.one("Unsqueeze", [scale, last])])
    norm_s = b.one("Sqrt", [b.one("Add", [b.one("Mul", [alpha_s, alpha_s]), b.one("ReduceSum", [
        b.one("Mul", [x_s, x_s]), last], keepdims=0)])])
    # -0.0 too, as Fortran's SIGN (read from the input: ONNX Runtime's Where may turn a -0.0 into +0.0)
    negative = b.one("Less", [b.one("Div", [one, b.one("Gather", [vec, b.scalar(0, np.dtype(np.int64))],
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
    info = b.one("Where", [any_of(not_a_number), b.scalar(-4, _I32), b.scalar(0, _I32)])
    return [a, values, u, vt, info]


#: No operation of its own: :mod:`.svd`'s ``gesdd`` calls :func:`vector_svd`.
TABLE: dict[str, Translation] = {}
