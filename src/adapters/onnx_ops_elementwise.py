"""ONNX translations of StableHLO's and CHLO's elementwise operations, constants and iota.

StableHLO's elementwise operations take operands of one shape (no implicit
broadcasting), so each maps to the ONNX operator of the same meaning
without broadcasting concerns. Only operations whose ONNX counterpart
computes the same values are here: the others (``atan2``, ``log_plus_one``,
the bitwise operations on integers, ...) come with the next issue's
edge-case tests, and until then are refused by the table's default.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo
from onnx import TensorProto

from .onnx_builder import GraphBuilder, bfloat16_values, narrow_float, tensor_dtype, tensor_shape

Translation = Callable[[GraphBuilder, Any, Sequence[str]], list[str]]


def _same(op_type: str) -> Translation:
    def translate(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
        return [b.one(op_type, args)]
    return translate


def _float_only(op_type: str) -> Translation:
    def translate(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
        if tensor_dtype(op.results[0]).kind != "f":
            b.refuse("defined here for floating-point operands only")
        return [b.one(op_type, args)]
    return translate


def _integer_only(op_type: str) -> Translation:
    def translate(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
        if tensor_dtype(op.results[0]).kind not in "iu":
            b.refuse("defined here for integers only (NaN and signed zeros come later)")
        return [b.one(op_type, args)]
    return translate


def _logical(bool_op: str) -> Translation:
    def translate(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
        if tensor_dtype(op.results[0]) != np.dtype(np.bool_):
            b.refuse("defined here for booleans only (bitwise integer operations come later)")
        return [b.one(bool_op, args)]
    return translate


def _rsqrt(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    return [b.one("Reciprocal", [b.one("Sqrt", args)])]


def _safe_divisor(b: GraphBuilder, op: Any, divisor: str) -> bool:
    """Whether an integer division by ``divisor`` computes StableHLO's result in ONNX Runtime.

    Integer ``Div`` and ``Mod`` truncate toward zero as StableHLO's do, but
    fail or overflow where StableHLO defines a result (a zero divisor, the
    smallest integer by -1): a constant divisor without 0 and -1 (what
    symbolic shape arithmetic divides by) rules those out; ``Mod`` computes
    in double precision, exact up to 32-bit integers.
    """
    dtype = tensor_dtype(op.results[0])
    known = b.known.get(divisor)
    return (known is not None and dtype.itemsize <= 4 and not bool(np.any(known == 0))
            and (dtype.kind == "u" or not bool(np.any(known == -1))))


def _divide(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    if tensor_dtype(op.results[0]).kind != "f" and not _safe_divisor(b, op, args[1]):
        b.refuse("integer division by a value that may be 0 or -1 (ONNX Runtime fails where XLA defines "
                 "a result) comes later")
    return [b.one("Div", args)]


def _remainder(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    if tensor_dtype(op.results[0]).kind != "f" and not _safe_divisor(b, op, args[1]):
        b.refuse("integer remainder by a value that may be 0 or -1 comes later")
    return [b.one("Mod", args, fmod=1)]  # C's fmod: the sign of the dividend, as StableHLO's


def _is_finite(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    return [b.one("Not", [b.one("Or", [b.one("IsNaN", args), b.one("IsInf", args)])])]


_COMPARISONS = {"EQ": ("Equal", False), "NE": ("Equal", True), "LT": ("Less", False),
                "LE": ("LessOrEqual", False), "GT": ("Greater", False), "GE": ("GreaterOrEqual", False)}


def _compare(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    direction = stablehlo.ComparisonDirectionAttr(op.attributes["comparison_direction"]).value
    if "compare_type" in op.attributes:
        kind = stablehlo.ComparisonTypeAttr(op.attributes["compare_type"]).value
        if kind == "TOTALORDER":
            b.refuse("total-order float comparison comes later")
    op_type, negate = _COMPARISONS[direction]
    result = b.one(op_type, args)
    return [b.one("Not", [result]) if negate else result]


#: Where's types in ONNX Runtime's CPU kernels; the others select in a wider type that holds them exactly.
_WHERE_TYPES = {np.dtype(t) for t in (np.uint8, np.int32, np.int64, np.float32, np.float64)}
_WHERE_WIDER = {np.dtype(np.bool_): np.uint8, np.dtype(np.int8): np.int32, np.dtype(np.int16): np.int32,
                np.dtype(np.uint16): np.int32, np.dtype(np.uint32): np.int64, np.dtype(np.float16): np.float32}


def _select(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    dtype = tensor_dtype(op.results[0])
    if dtype in _WHERE_TYPES:
        return [b.one("Where", args)]
    if dtype not in _WHERE_WIDER:
        b.refuse(f"ONNX Runtime has no Where for {dtype}")
    wide = np.dtype(_WHERE_WIDER[dtype])
    return [b.cast(b.one("Where", [args[0], b.cast(args[1], wide), b.cast(args[2], wide)]), dtype)]


def _convert(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    source, target = tensor_dtype(op.operands[0]), tensor_dtype(op.results[0])
    if source == target:
        return [args[0]]
    if source.kind == "f" and target.kind in "iu":
        b.refuse("float to integer conversion (StableHLO rounds and saturates) comes later")
    return [b.cast(args[0], target)]


def _constant(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    attr = ir.DenseElementsAttr(op.attributes["value"])
    dtype, shape = tensor_dtype(op.results[0]), tensor_shape(op.results[0])
    if attr.is_splat:
        value = _splat_value(attr.get_splat_value(), dtype)
        scalar = b.scalar(value, dtype)
        if not shape:
            return [scalar]
        expanded = b.one("Expand", [scalar, b.int64s([d or 0 for d in shape])])
        b.known[expanded] = np.broadcast_to(b.known[scalar], [d or 0 for d in shape])
        return [expanded]
    array = bfloat16_values(attr) if narrow_float(op.results[0]) == TensorProto.BFLOAT16 else np.array(attr)
    if array.dtype != dtype:
        array = array.astype(dtype)
    return [b.constant(array.reshape([d or 0 for d in shape]))]


def _splat_value(attr: ir.Attribute, dtype: np.dtype[Any]) -> Any:
    if dtype.kind == "f":
        return ir.FloatAttr(attr).value
    value = ir.IntegerAttr(attr).value
    return value != 0 if dtype == np.dtype(np.bool_) else value


def _iota(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    dimension = ir.IntegerAttr(op.attributes["iota_dimension"]).value
    shape = tensor_shape(op.results[0])
    if None in shape:
        b.refuse("a static iota with a dynamic result type")
    return [iota(b, tensor_dtype(op.results[0]), dimension, len(shape),
                 b.int64s([shape[dimension] or 0]), b.int64s([d or 0 for d in shape]))]


def iota(b: GraphBuilder, dtype: np.dtype[Any], dimension: int, rank: int, size: str, shape: str) -> str:
    """0, 1, ... along ``dimension`` of a ``shape`` (a 1-D int64 value) of ``rank``; ``size``: [n]."""
    count = b.one("Squeeze", [size, b.int64s([0])])
    ramp = b.one("Range", [b.scalar(0, np.dtype(np.int64)), count, b.scalar(1, np.dtype(np.int64))])
    if dtype != np.dtype(np.int64):
        ramp = b.cast(ramp, dtype)
    others = [i for i in range(rank) if i != dimension]
    if others:
        ramp = b.one("Unsqueeze", [ramp, b.int64s(others)])
    return b.one("Expand", [ramp, shape])


TABLE: dict[str, Translation] = {
    "stablehlo.add": _same("Add"),
    "stablehlo.subtract": _same("Sub"),
    "stablehlo.multiply": _same("Mul"),
    "stablehlo.divide": _divide,
    "stablehlo.remainder": _remainder,
    "stablehlo.maximum": _same("Max"),
    "stablehlo.minimum": _same("Min"),
    "stablehlo.power": _float_only("Pow"),
    "stablehlo.abs": _same("Abs"),
    "stablehlo.negate": _same("Neg"),
    "stablehlo.sign": _integer_only("Sign"),
    "stablehlo.exponential": _float_only("Exp"),
    "stablehlo.log": _float_only("Log"),
    "stablehlo.sqrt": _float_only("Sqrt"),
    "stablehlo.rsqrt": _rsqrt,
    "stablehlo.tanh": _float_only("Tanh"),
    "stablehlo.logistic": _float_only("Sigmoid"),
    "stablehlo.sine": _float_only("Sin"),
    "stablehlo.cosine": _float_only("Cos"),
    "stablehlo.tan": _float_only("Tan"),
    "stablehlo.floor": _float_only("Floor"),
    "stablehlo.ceil": _float_only("Ceil"),
    "stablehlo.round_nearest_even": _float_only("Round"),
    "stablehlo.is_finite": _is_finite,
    "stablehlo.and": _logical("And"),
    "stablehlo.or": _logical("Or"),
    "stablehlo.xor": _logical("Xor"),
    "stablehlo.not": _logical("Not"),
    "stablehlo.compare": _compare,
    "stablehlo.select": _select,
    "stablehlo.convert": _convert,
    "stablehlo.constant": _constant,
    "stablehlo.iota": _iota,
    "chlo.erf": _float_only("Erf"),
}

#: The composites JAX wraps CHLO operations in (``stablehlo.composite "chlo.erf"``).
COMPOSITES: dict[str, Translation] = {
    "chlo.erf": _float_only("Erf"),
    "chlo.sinh": _float_only("Sinh"),
    "chlo.cosh": _float_only("Cosh"),
    "chlo.asin": _float_only("Asin"),
    "chlo.acos": _float_only("Acos"),
}
