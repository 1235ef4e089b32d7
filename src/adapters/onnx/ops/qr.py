"""ONNX translations of JAX's LAPACK QR kernels on the CPU: ``geqrf`` (Householder) and ``orgqr`` (forming Q).

``jnp.linalg.qr`` lowers to ``lapack_{s,d}geqrf_ffi`` and then
``lapack_{s,d}orgqr_ffi``; each becomes one ONNX ``Loop`` over all the
batch's matrices (:meth:`.GraphBuilder.loop`).

- ``geqrf`` is LAPACK's unblocked ``geqr2``: for each column ``j`` the
  reflector ``slarfg`` makes from ``alpha = A[j, j]`` and ``x = A[j+1:, j]``:
  ``beta = -sign(alpha) * hypot(alpha, |x|)`` (a negative zero counts as
  negative, as Fortran's ``SIGN``), ``tau = (beta - alpha) / beta`` and
  ``v = x / (alpha - beta)`` (by the reciprocal, as LAPACK scales); a zero
  ``x`` gives ``tau = 0`` and leaves ``alpha``. The reflector is applied to
  the trailing columns. So R's diagonal and Q's columns have LAPACK's
  signs, the convention ``jnp.linalg.qr`` returns.
- ``orgqr`` applies the reflectors ``H_k ... H_1`` in turn, from the last, to
  the first columns of the identity: ``Q = H_1 ... H_k I``.

The results equal LAPACK's up to rounding (blocked LAPACK applies the
same reflectors in another order); LAPACK's rescaling of reflectors whose
``beta`` is below float's smallest normal is not reproduced (it changes no
result beyond rounding).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


from jaxport.adapters.onnx.builder import I64, GraphBuilder, tensor_dtype, tensor_shape
from .common import Translation, dim_size, iota_of, put
from .lapack import factor_steps, per_step


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


#: The custom calls of this family (the ONNX plan lets them through: ``LAPACK_TRANSLATED``).
CUSTOM_CALLS: dict[str, Translation] = {
    **{f"lapack_{t}geqrf_ffi": _geqrf for t in "sd"}, **{f"lapack_{t}orgqr_ffi": _orgqr for t in "sd"}}
