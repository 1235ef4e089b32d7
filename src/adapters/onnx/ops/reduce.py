"""ONNX translation of ``reduce``.

``reduce`` with a body of one ``add``, ``multiply``, ``maximum``,
``minimum``, ``and`` or ``or`` becomes the matching ONNX reduction (``and``,
``or`` and ``xor`` of integers and ``xor`` of booleans are :mod:`.bitwise_reduce`'s),
combined with the init value unless that is the operation's identity.
The argmax/argmin ``reduce`` JAX emits (values and an iota, the body
picking NaN first and the lowest index on ties) is ``ArgMax``/``ArgMin``.
Other bodies, and other reductions of several operands, are refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from jaxport.adapters.onnx.builder import GraphBuilder, int_list, tensor_dtype
from .bitwise_reduce import bitwise_body, bitwise_reduce, wrapping_fold
from .common import Translation, is_identity, reducer, splat_value, wide_dtype
from .linalg import INTEGER_WIDER


#: The reducer body's operator -> the ONNX reduction (booleans reduce as int32: and is min, or is max).
_REDUCTIONS = {"Add": "ReduceSum", "Mul": "ReduceProd", "Max": "ReduceMax", "Min": "ReduceMin",
               "And": "ReduceMin", "Or": "ReduceMax"}


def _reduce_one(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    if len(op.results) != 1:
        b.refuse("a reduction of several operands (argmax, argmin) comes later")
    binary = reducer(op)
    dtype = tensor_dtype(op.results[0])
    bitwise = bitwise_body(op)
    if bitwise is not None and (dtype.kind in "iu" or bitwise == "BitwiseXor"):
        return bitwise_reduce(b, op, args, bitwise)
    if binary is None:
        b.refuse("its body is not one add, multiply, maximum, minimum, and, or or xor of its two arguments")
    reduce_type = _REDUCTIONS[binary]
    dims = int_list(op.attributes["dimensions"])
    if dtype == np.dtype(np.bool_) and binary not in ("And", "Or"):
        b.refuse("a reduction of booleans other than and/or")
    if dtype != np.dtype(np.bool_) and binary in ("And", "Or"):
        b.refuse("bitwise reductions of floats")
    if not dims:  # XLA's CPU reduction over no dimension is the operand (its init value unused)
        return [args[0]]
    if dtype.kind in "iu" and (binary == "Mul" or (binary == "Add" and dtype.itemsize == 8)):
        return wrapping_fold(b, op, args, binary)
    wide = _reduction_type(b, dtype, binary)
    operand = args[0] if wide == dtype else b.cast(args[0], wide)
    reduced = b.one(reduce_type, [operand, b.int64s(dims)], keepdims=0)
    if wide != dtype:
        reduced = b.cast(reduced, dtype)
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
    :func:`.bitwise_reduce.wrapping_fold`'s.
    """
    if dtype == np.dtype(np.bool_):
        return np.dtype(np.int32)
    if dtype.kind not in "iu":
        return dtype
    if binary == "Add":
        return np.dtype(np.int64)
    return dtype if dtype == np.dtype(np.uint64) else INTEGER_WIDER.get(dtype, dtype)  # keeping the order


def _with_nan(b: GraphBuilder, operand: str, dims: list[int], reduced: str, dtype: np.dtype[Any]) -> str:
    """NaN where a reduced slice holds one, as StableHLO's maximum and minimum propagate it.

    ONNX Runtime's ReduceMax and ReduceMin skip NaNs (its elementwise Max
    and Min propagate them).
    """
    ordered = b.cast(b.one("Equal", [operand, operand]), np.dtype(np.int32))
    clean = b.cast(b.one("ReduceMin", [ordered, b.int64s(dims)], keepdims=0), np.dtype(np.bool_))
    return b.one("Where", [clean, reduced, b.scalar(np.nan, dtype)])


def _argminmax(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str] | None:
    """The argmax/argmin reduce JAX emits as ``ArgMax``/``ArgMin``, or None for another body."""
    if len(op.operands) != 4 or len(int_list(op.attributes["dimensions"])) != 1:
        return None
    axis = int_list(op.attributes["dimensions"])[0]
    body = list(op.regions[0].blocks[0].operations)
    names = [o.operation.name.split(".")[-1] for o in body]
    if names != ["compare", "compare", "or", "compare", "compare", "and", "or", "select", "select", "return"]:
        return None
    directions = [stablehlo.ComparisonDirectionAttr(body[i].attributes["comparison_direction"]).value
                  for i in (0, 1, 3, 4)]
    if directions[1:] != ["NE", "EQ", "LT"] or directions[0] not in ("GT", "LT"):
        return None
    index = op.operands[1].owner
    iotas = ("stablehlo.iota", "stablehlo.dynamic_iota")
    if (not isinstance(index, (ir.Operation, ir.OpView)) or index.name not in iotas
            or ir.IntegerAttr(index.attributes["iota_dimension"]).value != axis or splat_value(op.operands[3]) != 0):
        return None
    dtype = tensor_dtype(op.operands[0])
    wide = wide_dtype(dtype)
    x = args[0] if wide == dtype else b.cast(args[0], wide)
    largest = directions[0] == "GT"
    picked = x
    if wide.kind == "f":
        picked = b.one("Where", [b.one("IsNaN", [x]), b.scalar(-np.inf if largest else np.inf, wide), x])
    position = b.one("ArgMax" if largest else "ArgMin", [picked], axis=axis, keepdims=1, select_last_index=0)
    if wide.kind == "f":
        nan = b.cast(b.one("IsNaN", [x]), np.dtype(np.int32))
        first_nan = b.one("ArgMax", [nan], axis=axis, keepdims=1, select_last_index=0)
        any_nan = b.cast(b.one("ReduceMax", [nan, b.int64s([axis])], keepdims=1), np.dtype(np.bool_))
        position = b.one("Where", [any_nan, first_nan, position])
    value = b.one("Squeeze", [b.one("GatherElements", [args[0], position], axis=axis), b.int64s([axis])])
    index_dtype = tensor_dtype(op.results[1])
    return [value, b.cast(b.one("Squeeze", [position, b.int64s([axis])]), index_dtype)]


def _reduce(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    if len(op.results) == 2:
        found = _argminmax(b, op, args)
        if found is not None:
            return found
        b.refuse("a reduction of several operands other than JAX's argmax/argmin")
    return _reduce_one(b, op, args)


TABLE: dict[str, Translation] = {
    "stablehlo.reduce": _reduce,
}
