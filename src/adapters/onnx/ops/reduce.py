"""ONNX translation of ``reduce``: ONNX's reductions, bitwise and wrapping folds in a ``Loop``, argmax/argmin.

``reduce`` with a body of one ``add``, ``multiply``, ``maximum``,
``minimum``, ``and`` or ``or`` becomes the matching ONNX reduction,
combined with the init value unless that is the operation's identity.

ONNX has no bitwise reduction, and ONNX Runtime's integer ``ReduceProd``
saturates where XLA's product wraps: for ``and``, ``or`` and ``xor`` of
integers, ``xor`` of booleans, integer products and 64-bit sums the
reduced dimensions are moved to the front and flattened into one, and a
``Loop`` over it folds each slice into the init value with
``BitwiseAnd``/``BitwiseOr``/``BitwiseXor`` (``Xor`` on booleans) or
``Mul``/``Add`` (which wrap), exactly, in any order (the operations are
associative and commutative). An empty reduced dimension gives the init
value, and a reduction over no dimension the operand, as XLA's on the CPU.
The argmax/argmin ``reduce`` JAX emits (values and an iota, the body
picking NaN first and the lowest index on ties) is ``ArgMax``/``ArgMin``.
Other bodies, and other reductions of several operands, are refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir

from jaxport.adapters.onnx.builder import BOOL, I32, I64, GraphBuilder, int_list, tensor_dtype, tensor_shape
from .common import Translation, block_reducer, direction, is_identity, reducer, splat_value, transposed, wide_dtype
from .linalg import INTEGER_WIDER


#: The reducer body's operator -> the ONNX reduction (booleans reduce as int32: and is min, or is max).
_REDUCTIONS = {"Add": "ReduceSum", "Mul": "ReduceProd", "Max": "ReduceMax", "Min": "ReduceMin",
               "And": "ReduceMin", "Or": "ReduceMax"}


def _reduce(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    found = _argminmax(b, op, args) if len(op.results) == 2 else None
    if found is not None:
        return found
    if len(op.results) != 1:
        b.refuse("a reduction of several operands other than JAX's argmax/argmin")
    binary = reducer(op)
    dtype = tensor_dtype(op.results[0])
    bitwise = block_reducer(op.regions[0].blocks[0], _BITWISE)  # and, or, xor
    if bitwise is not None and (dtype.kind in "iu" or bitwise == "BitwiseXor"):  # booleans: Xor, And, Or
        operator = {"BitwiseXor": "Xor", "BitwiseAnd": "And", "BitwiseOr": "Or"}[bitwise] if dtype == BOOL else bitwise
        return [_folded(b, op, args[0], args[1], operator, dtype)]
    if binary is None:
        b.refuse("its body is not one add, multiply, maximum, minimum, and, or or xor of its two arguments")
    reduce_type = _REDUCTIONS[binary]
    dims = int_list(op.attributes["dimensions"])
    if dtype == BOOL and binary not in ("And", "Or"):
        b.refuse("a reduction of booleans other than and/or")
    if dtype != BOOL and binary in ("And", "Or"):
        b.refuse("bitwise reductions of floats")
    if not dims:  # XLA's CPU reduction over no dimension is the operand (its init value unused)
        return [args[0]]
    if dtype.kind in "iu" and (binary == "Mul" or (binary == "Add" and dtype.itemsize == 8)):
        return _wrapping_fold(b, op, args, binary)
    wide = _reduction_type(b, dtype, binary)
    reduced = b.one(reduce_type, [b.cast(args[0], wide, dtype), b.int64s(dims)], keepdims=0)
    reduced = b.cast(reduced, dtype, wide)
    if dtype.kind == "f" and binary in ("Max", "Min"):
        reduced = _with_nan(b, args[0], dims, reduced, dtype)
    if is_identity(binary, op.operands[1]):
        return [reduced]
    return [b.one(binary, [reduced, args[1]])]


def _reduction_type(b: GraphBuilder, dtype: np.dtype[Any], binary: str) -> np.dtype[Any]:
    """The type to reduce ``dtype`` in, so that ONNX Runtime gives StableHLO's result cast back.

    ONNX Runtime's integer ReduceSum and ReduceProd saturate where
    StableHLO's wrap: sums of integers up to 32 bits run in int64 (exact,
    then wrapped by the cast back); 64-bit sums and integer products are
    :func:`_wrapping_fold`'s.
    """
    if dtype == BOOL:
        return I32
    if dtype.kind not in "iu":
        return dtype
    if binary == "Add":
        return I64
    return dtype if dtype == np.dtype(np.uint64) else INTEGER_WIDER.get(dtype, dtype)  # keeping the order


def _with_nan(b: GraphBuilder, operand: str, dims: list[int], reduced: str, dtype: np.dtype[Any]) -> str:
    """NaN where a reduced slice holds one, as StableHLO's maximum and minimum propagate it.

    ONNX Runtime's ReduceMax and ReduceMin skip NaNs (its elementwise Max
    and Min propagate them).
    """
    ordered = b.cast(b.one("Equal", [operand, operand]), I32)
    clean = b.cast(b.one("ReduceMin", [ordered, b.int64s(dims)], keepdims=0), BOOL)
    return b.one("Where", [clean, reduced, b.scalar(np.nan, dtype)])


#: A bitwise body's operation -> its ONNX operator.
_BITWISE = {"stablehlo.and": "BitwiseAnd", "stablehlo.or": "BitwiseOr", "stablehlo.xor": "BitwiseXor"}


def _wrapping_fold(b: GraphBuilder, op: Any, args: Sequence[str], operator: str) -> list[str]:
    """``reduce`` of integers with a ``multiply`` (``operator`` ``Mul``) or ``add`` (``Add``) body, wrapping
    as XLA's (ONNX Runtime's ReduceProd and ReduceSum saturate): folded in a ``Loop``, in int32 for
    narrower integers and int64 for uint32 and uint64 (the same modulo 2**bits), cast back."""
    dtype = tensor_dtype(op.results[0])
    wide = INTEGER_WIDER.get(dtype, dtype)
    x, init = (b.cast(a, wide, dtype) for a in args[:2])
    product = _folded(b, op, x, init, operator, wide)
    return [b.cast(product, dtype, wide)]


def _folded(b: GraphBuilder, op: Any, x: str, init: str, operator: str, dtype: np.dtype[Any]) -> str:
    """``op``'s one operand ``x`` (of ``dtype``) reduced over its dimensions by ``operator`` from ``init``."""
    dims = int_list(op.attributes["dimensions"])
    rank = len(tensor_shape(op.operands[0]))
    kept = [d for d in range(rank) if d not in dims]
    if not dims:
        return x  # XLA's CPU reduction over no dimension is the operand (its init value unused)
    x = transposed(b, x, [*dims, *kept])
    rest = b.one("Shape", [x], start=len(dims))
    count = b.one("ReduceProd", [b.one("Shape", [x], start=0, end=len(dims))], keepdims=1)  # no -1: rest may be 0
    x = b.one("Reshape", [x, b.one("Concat", [count, rest], axis=0)], allowzero=1)
    start = b.one("Expand", [init, rest])
    trips = b.one("Squeeze", [count, b.int64s([0])])
    return b.loop(trips, [(start, (dtype, len(kept)))],
                  lambda c, index, carried: [c.one(operator, [carried[0], c.one("Gather", [x, index], axis=0)])])[0]


def _argminmax(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str] | None:
    """The argmax/argmin reduce JAX emits as ``ArgMax``/``ArgMin``, or None for another body."""
    if len(op.operands) != 4 or len(int_list(op.attributes["dimensions"])) != 1:
        return None
    axis = int_list(op.attributes["dimensions"])[0]
    body = list(op.regions[0].blocks[0].operations)
    names = [o.operation.name.split(".")[-1] for o in body]
    if names != ["compare", "compare", "or", "compare", "compare", "and", "or", "select", "select", "return"]:
        return None
    directions = [direction(body[i]) for i in (0, 1, 3, 4)]
    if directions[1:] != ["NE", "EQ", "LT"] or directions[0] not in ("GT", "LT"):
        return None
    index = op.operands[1].owner
    iotas = ("stablehlo.iota", "stablehlo.dynamic_iota")
    if (not isinstance(index, (ir.Operation, ir.OpView)) or index.name not in iotas
            or ir.IntegerAttr(index.attributes["iota_dimension"]).value != axis or splat_value(op.operands[3]) != 0):
        return None
    dtype = tensor_dtype(op.operands[0])
    wide = wide_dtype(dtype)
    x = b.cast(args[0], wide, dtype)
    largest = directions[0] == "GT"
    picked = x
    if wide.kind == "f":
        picked = b.one("Where", [b.one("IsNaN", [x]), b.scalar(-np.inf if largest else np.inf, wide), x])
    position = b.one("ArgMax" if largest else "ArgMin", [picked], axis=axis, keepdims=1, select_last_index=0)
    if wide.kind == "f":
        nan = b.cast(b.one("IsNaN", [x]), I32)
        first_nan = b.one("ArgMax", [nan], axis=axis, keepdims=1, select_last_index=0)
        any_nan = b.cast(b.one("ReduceMax", [nan, b.int64s([axis])], keepdims=1), BOOL)
        position = b.one("Where", [any_nan, first_nan, position])
    value = b.one("Squeeze", [b.one("GatherElements", [args[0], position], axis=axis), b.int64s([axis])])
    index_dtype = tensor_dtype(op.results[1])
    return [value, b.cast(b.one("Squeeze", [position, b.int64s([axis])]), index_dtype)]


TABLE: dict[str, Translation] = {
    "stablehlo.reduce": _reduce,
}
