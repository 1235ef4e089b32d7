"""ONNX translation of ``dot_general``.

``dot_general`` becomes ``MatMul`` (or ``Gemm`` with ``transB`` for a
product with a transposed 2-D right side, on the rows of a left side of
any rank) wherever its dimension numbers are a
matrix product, possibly batched over leading dimensions; a weight is never
transposed at conversion (the graph transposes it, and ONNX Runtime folds
that into its kernels or its initializers at load). Every other combination
of dimension numbers becomes one ``Einsum``.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib.mlir.dialects import stablehlo

from jaxport.adapters.onnx.builder import I32, I64, GraphBuilder, tensor_dtype, tensor_shape
from .common import Translation


#: Integers that ONNX Runtime's MatMul, Einsum and reductions (onnx_ops_reduce) do not take are computed in a
#: signed type they take, which wraps: the result cast back is the same modulo 2**bits as
#: StableHLO's wrapping one.
INTEGER_WIDER: dict[np.dtype[Any], np.dtype[Any]] = {
    **{np.dtype(t): I32 for t in (np.int8, np.int16, np.uint8, np.uint16)},
    np.dtype(np.uint32): I64, np.dtype(np.uint64): I64}


def _dot_general(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    dtype = tensor_dtype(op.results[0])
    wide = INTEGER_WIDER.get(dtype, dtype)
    lhs, rhs = (b.cast(args[i], wide, tensor_dtype(op.operands[i])) for i in (0, 1))
    product = _product(b, op, lhs, rhs)
    return [b.cast(product, dtype, wide)]


def _product(b: GraphBuilder, op: Any, lhs: str, rhs: str) -> str:
    numbers = stablehlo.DotDimensionNumbers(op.attributes["dot_dimension_numbers"])
    lb, rb = list(numbers.lhs_batching_dimensions), list(numbers.rhs_batching_dimensions)
    lc, rc = list(numbers.lhs_contracting_dimensions), list(numbers.rhs_contracting_dimensions)
    lrank, rrank = len(tensor_shape(op.operands[0])), len(tensor_shape(op.operands[1]))
    nb = len(lb)
    lfree = [i for i in range(lrank) if i not in lb and i not in lc]
    rfree = [i for i in range(rrank) if i not in rb and i not in rc]
    matmul = (lb == rb == list(range(nb)) and len(lc) == 1 and len(rfree) <= 1
              and (nb == 0 or (len(lfree) == 1 and len(rfree) == 1)))
    if not matmul:
        return _einsum(b, lhs, rhs, lrank, rrank, (lb, rb, lc, rc))
    if lc[0] != lrank - 1:
        lhs = b.one("Transpose", [lhs], perm=[*range(nb), *lfree, lc[0]])
    if not rfree:  # ONNX Runtime 1.32 fuses a transposed left side into a MatMul by a vector wrongly: a column
        column = b.one("MatMul", [lhs, b.one("Unsqueeze", [rhs, b.int64s([-1])])])
        return b.one("Squeeze", [column, b.int64s([-1])])
    if rc[0] == nb:
        return b.one("MatMul", [lhs, rhs])
    if nb == 0 and lrank == 2:
        return b.one("Gemm", [lhs, rhs], transB=1)
    if nb == 0 and rrank == 2:
        return _gemm_rows(b, op, lhs, rhs, lrank)
    return b.one("MatMul", [lhs, b.one("Transpose", [rhs], perm=[*range(nb), rc[0], rfree[0]])])


def _gemm_rows(b: GraphBuilder, op: Any, lhs: str, rhs: str, lrank: int) -> str:
    """``lhs[..., k] @ rhs[n, k]^T`` as ``Gemm`` with ``transB`` on the rows of ``lhs`` (no transposed weight)."""
    k, n = tensor_shape(op.operands[1])[1], tensor_shape(op.results[0])[-1]
    out = tensor_shape(op.results[0])
    rows = b.one("Reshape", [lhs, b.int64s([-1, -1 if k is None else k])])
    product = b.one("Gemm", [rows, rhs], transB=1)
    if None not in out:
        return b.one("Reshape", [product, b.int64s([int(d) for d in out if d is not None])])
    leading = b.one("Shape", [lhs], start=0, end=lrank - 1)
    columns = b.int64s([-1 if n is None else n])
    return b.one("Reshape", [product, b.one("Concat", [leading, columns], axis=0)])


def _einsum(b: GraphBuilder, lhs: str, rhs: str, lrank: int, rrank: int,
            numbers: tuple[list[int], list[int], list[int], list[int]]) -> str:
    lb, rb, lc, rc = numbers
    letters = iter(string.ascii_letters)
    left = [""] * lrank
    right = [""] * rrank
    for pairs in (zip(lb, rb), zip(lc, rc)):
        for i, j in pairs:
            left[i] = right[j] = next(letters)
    for term in (left, right):
        for i, letter in enumerate(term):
            if not letter:
                term[i] = next(letters)
    out = ([left[i] for i in lb] + [x for i, x in enumerate(left) if i not in lb and i not in lc]
           + [x for j, x in enumerate(right) if j not in rb and j not in rc])
    return b.one("Einsum", [lhs, rhs], equation=f"{''.join(left)},{''.join(right)}->{''.join(out)}")


TABLE: dict[str, Translation] = {
    "stablehlo.dot_general": _dot_general,
}
