"""ONNX translations of the elementwise operations that map one to one, constants and iota.

StableHLO's elementwise operations take operands of one shape (no implicit
broadcasting), so each maps to the ONNX operator of the same meaning
without broadcasting concerns. Only operations whose ONNX counterpart
computes the same values, edges included, are here; those that need XLA's
edge semantics spelled out (``divide``, ``compare``, ``convert``, ``sign``,
``maximum``, ...) are in :mod:`.arithmetic`, the bitwise and logical ones in
:mod:`.bits`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from onnx import TensorProto

from jaxport.adapters.onnx.builder import (
    F32, F64, I64, GraphBuilder, bfloat16_values, narrow_float, tensor_dtype, tensor_shape
)
from . import signed_zeros
from .common import Translation, iota_of, same, splat_value, where, where_selects

def _select(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    dtype = tensor_dtype(op.results[0])
    if not where_selects(dtype):
        b.refuse(f"ONNX Runtime has no Where for {dtype}")
    if dtype in (F32, F64):
        return [signed_zeros.select(b, args[0], args[1], args[2])]
    return [where(b, args[0], args[1], args[2], dtype)]


def _constant(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    dtype, shape = tensor_dtype(op.results[0]), tensor_shape(op.results[0])
    value = splat_value(op.results[0])
    if value is not None:
        scalar = b.scalar(value, dtype)
        if not shape:
            return [scalar]
        expanded = b.one("Expand", [scalar, b.int64s([d or 0 for d in shape])])
        b.known[expanded] = np.broadcast_to(b.known[scalar], [d or 0 for d in shape])
        return [expanded]
    attr = ir.DenseElementsAttr(op.attributes["value"])
    array = bfloat16_values(attr) if narrow_float(op.results[0]) == TensorProto.BFLOAT16 else np.array(attr)
    if array.dtype != dtype:
        array = array.astype(dtype)
    return [b.constant(array.reshape([d or 0 for d in shape]))]


def _iota(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    dimension = ir.IntegerAttr(op.attributes["iota_dimension"]).value
    shape = tensor_shape(op.results[0])
    if None in shape:
        b.refuse("a static iota with a dynamic result type")
    return [iota(b, tensor_dtype(op.results[0]), dimension, len(shape),
                 b.int64s([shape[dimension] or 0]), b.int64s([d or 0 for d in shape]))]


def iota(b: GraphBuilder, dtype: np.dtype[Any], dimension: int, rank: int, size: str, shape: str) -> str:
    """0, 1, ... along ``dimension`` of a ``shape`` (a 1-D int64 value) of ``rank``; ``size``: [n]."""
    ramp = iota_of(b, b.one("Squeeze", [size, b.int64s([0])]))
    if dtype != I64:
        ramp = b.cast(ramp, dtype)
    others = [i for i in range(rank) if i != dimension]
    if others:
        ramp = b.one("Unsqueeze", [ramp, b.int64s(others)])
    return b.one("Expand", [ramp, shape])


#: The elementwise operations defined here for floats only that are an ONNX operator on the same operand.
_FLOAT_UNARY = {"exponential": "Exp", "log": "Log", "sqrt": "Sqrt", "tanh": "Tanh", "logistic": "Sigmoid",
                "sine": "Sin", "cosine": "Cos", "tan": "Tan", "floor": "Floor", "ceil": "Ceil"}

TABLE: dict[str, Translation] = {
    "stablehlo.add": same("Add"),
    "stablehlo.subtract": same("Sub"),
    "stablehlo.multiply": same("Mul"),
    "stablehlo.abs": same("Abs"),
    "stablehlo.negate": same("Neg"),
    **{f"stablehlo.{name}": same(op_type, floats=True) for name, op_type in _FLOAT_UNARY.items()},
    "stablehlo.rsqrt": lambda b, op, args: [b.one("Reciprocal", [b.one("Sqrt", args)])],
    "stablehlo.is_finite": lambda b, op, args: [
        b.one("Not", [b.one("Or", [b.one("IsNaN", args), b.one("IsInf", args)])])],
    "stablehlo.select": _select,
    "stablehlo.constant": _constant,
    "stablehlo.iota": _iota,
    "chlo.erf": same("Erf", floats=True),
}

#: The composites JAX wraps CHLO operations in (``stablehlo.composite "chlo.erf"``).
COMPOSITES: dict[str, Translation] = {
    f"chlo.{name}": same(name.capitalize(), floats=True) for name in ("erf", "sinh", "cosh", "asin", "acos")}
