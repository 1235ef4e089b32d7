"""ONNX translations of ``dot_general`` and ``reduce``.

``dot_general`` becomes ``MatMul`` (or ``Gemm`` with ``transB`` for a
product with a transposed 2-D right side, on the rows of a left side of
any rank) wherever its dimension numbers are a
matrix product, possibly batched over leading dimensions; a weight is never
transposed at conversion (the graph transposes it, and ONNX Runtime folds
that into its kernels or its initializers at load). Every other combination
of dimension numbers becomes one ``Einsum``. ``reduce`` with a body of one
``add``, ``multiply``, ``maximum``, ``minimum``, ``and`` or ``or`` becomes the
matching ONNX reduction, combined with the init value unless that is the
operation's identity.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from .onnx_builder import GraphBuilder, int_list, tensor_dtype, tensor_shape
from .onnx_ops_elementwise import Translation


#: Integers that ONNX Runtime's MatMul, Einsum and reductions do not take are computed in a
#: signed type they take, which wraps: the result cast back is the same modulo 2**bits as
#: StableHLO's wrapping one.
_WIDER: dict[np.dtype[Any], np.dtype[Any]] = {
    **{np.dtype(t): np.dtype(np.int32) for t in (np.int8, np.int16, np.uint8, np.uint16)},
    np.dtype(np.uint32): np.dtype(np.int64), np.dtype(np.uint64): np.dtype(np.int64)}


def _dot_general(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    dtype = tensor_dtype(op.results[0])
    wide = _WIDER.get(dtype, dtype)
    lhs, rhs = (args[i] if tensor_dtype(op.operands[i]) == wide else b.cast(args[i], wide) for i in (0, 1))
    product = _product(b, op, lhs, rhs)
    return [product if wide == dtype else b.cast(product, dtype)]


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
    if not rfree or rc[0] == nb:
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


_REDUCTIONS = {"stablehlo.add": ("ReduceSum", "Add"), "stablehlo.multiply": ("ReduceProd", "Mul"),
               "stablehlo.maximum": ("ReduceMax", "Max"), "stablehlo.minimum": ("ReduceMin", "Min"),
               "stablehlo.and": ("ReduceMin", "And"), "stablehlo.or": ("ReduceMax", "Or")}


def _reduce(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    if len(op.results) != 1:
        b.refuse("a reduction of several operands (argmax, argmin) comes later")
    body = op.regions[0].blocks[0]
    ops = list(body.operations)
    combine = ops[0] if len(ops) == 2 else None
    if (combine is None or combine.operation.name not in _REDUCTIONS or ops[1].operation.name != "stablehlo.return"
            or {_arg_number(v) for v in combine.operands} != {0, 1}
            or ops[1].operands[0] != combine.results[0]):
        b.refuse("its body is not one add, multiply, maximum, minimum, and or or of its two arguments")
    reduce_type, binary = _REDUCTIONS[combine.operation.name]
    dtype = tensor_dtype(op.results[0])
    dims = int_list(op.attributes["dimensions"])
    if dtype == np.dtype(np.bool_) and binary not in ("And", "Or"):
        b.refuse("a reduction of booleans other than and/or")
    if dtype != np.dtype(np.bool_) and binary in ("And", "Or"):
        b.refuse("bitwise reductions of integers come later")
    if not dims:
        return [b.one(binary, [args[0], args[1]])]
    wide = _reduction_type(b, dtype, binary)
    operand = args[0] if wide == dtype else b.cast(args[0], wide)
    reduced = b.one(reduce_type, [operand, b.int64s(dims)], keepdims=0)
    if wide != dtype:
        reduced = b.cast(reduced, dtype)
    if dtype.kind == "f" and binary in ("Max", "Min"):
        reduced = _with_nan(b, args[0], dims, reduced, dtype)
    if _is_identity(op.operands[1], binary, dtype):
        return [reduced]
    return [b.one(binary, [reduced, args[1]])]


def _reduction_type(b: GraphBuilder, dtype: np.dtype[Any], binary: str) -> np.dtype[Any]:
    """The type to reduce ``dtype`` in, so that ONNX Runtime gives StableHLO's result cast back.

    ONNX Runtime's integer ReduceSum and ReduceProd saturate where
    StableHLO's wrap: sums of integers up to 32 bits run in int64 (exact,
    then wrapped by the cast back); 64-bit sums and integer products are
    refused.
    """
    if dtype == np.dtype(np.bool_):
        return np.dtype(np.int32)
    if dtype.kind not in "iu":
        return dtype
    if binary == "Mul":
        b.refuse("integer products (ONNX Runtime's ReduceProd saturates where XLA wraps) come later")
    if binary == "Add":
        if dtype.itemsize == 8:
            b.refuse("64-bit integer sums (ONNX Runtime's ReduceSum saturates where XLA wraps) come later")
        return np.dtype(np.int64)
    return dtype if dtype == np.dtype(np.uint64) else _WIDER.get(dtype, dtype)  # keeping the order


def _with_nan(b: GraphBuilder, operand: str, dims: list[int], reduced: str, dtype: np.dtype[Any]) -> str:
    """NaN where a reduced slice holds one, as StableHLO's maximum and minimum propagate it.

    ONNX Runtime's ReduceMax and ReduceMin skip NaNs (its elementwise Max
    and Min propagate them).
    """
    ordered = b.cast(b.one("Equal", [operand, operand]), np.dtype(np.int32))
    clean = b.cast(b.one("ReduceMin", [ordered, b.int64s(dims)], keepdims=0), np.dtype(np.bool_))
    return b.one("Where", [clean, reduced, b.scalar(np.nan, dtype)])


def _arg_number(value: Any) -> int:
    return value.arg_number if isinstance(value, ir.BlockArgument) else -1


def _is_identity(value: Any, binary: str, dtype: np.dtype[Any]) -> bool:
    """Whether ``value`` is a constant that leaves the reduction's result unchanged."""
    owner: Any = None if isinstance(value, ir.BlockArgument) else value.owner
    if owner is None or owner.operation.name != "stablehlo.constant":
        return False
    found = np.array(ir.DenseElementsAttr(owner.attributes["value"])).reshape(-1)[0]
    if dtype.kind == "f":
        low, high = -np.inf, np.inf
    elif dtype.kind in "iu":
        low, high = np.iinfo(dtype).min, np.iinfo(dtype).max
    else:
        low, high = False, True
    identity = {"Add": 0, "Mul": 1, "Max": low, "Min": high, "And": True, "Or": False}[binary]
    return bool(found == identity)


TABLE: dict[str, Translation] = {
    "stablehlo.dot_general": _dot_general,
    "stablehlo.reduce": _reduce,
}
