"""ONNX translations that read a float's bits: ``bitcast_convert``, ``reduce_precision``, a total order.

They need ONNX's ``BitCast`` (opset 26; ONNX Runtime 1.32 and
onnxruntime-web 1.30 run it): a model using one is written at opset 26
(:meth:`~jaxport.adapters.onnx.builder.GraphBuilder.require_opset`), and
refused, naming the operation, where the conversion asks for an older
opset. Every other model keeps its opset.

- ``bitcast_convert`` between types of one width is ``BitCast`` (float16
  and bfloat16, float32 inside the graph, go through their own type);
  between widths (the narrow type's trailing dimension holds the wide
  one's words, least significant first) shifts and ors of unsigned
  integers, ``BitCast`` only for floats (JAX's ``u32[4]`` keys of
  ``rng_bit_generator`` to ``u64[2]`` stay at opset 21); of float16 and
  bfloat16 it is refused.
- ``reduce_precision`` of float32 and float64 is XLA's integer algorithm on
  the bits: the mantissa rounded to nearest even, an exponent out of the
  reduced range to a signed infinity or zero (no subnormals), NaNs kept
  as they are.
- ``compare`` with ``TOTALORDER`` of any floats maps each to a signed
  integer of its width whose order is the total order (``-NaN < -inf <
  ... < -0.0 < +0.0 < ... < +inf < +NaN``): negative floats' magnitude
  bits flipped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from onnx import TensorProto

from jaxport.adapters.onnx.builder import NARROW_FLOATS, GraphBuilder, onnx_type, tensor_dtype
from .common import Translation, compared, element, signed_of, stacked, unsigned_of

#: The opset that has ``BitCast``.
BITCAST_OPSET = 26


def bitcast(b: GraphBuilder, name: str, to: int) -> str:
    """``BitCast(name, to)`` (the model raised to opset 26)."""
    b.require_opset(BITCAST_OPSET, "BitCast")
    return b.one("BitCast", [name], to=to)


def _element(value: Any) -> str:
    return str(ir.RankedTensorType(value.type).element_type)


def _bitcast_convert(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    source, target = op.operands[0], op.results[0]
    if list(ir.RankedTensorType(source.type).shape) != list(ir.RankedTensorType(target.type).shape):
        return [_between_widths(b, op, args[0])]
    x = args[0]
    narrow_in, narrow_out = NARROW_FLOATS.get(_element(source)), NARROW_FLOATS.get(_element(target))
    if narrow_in is not None:
        x = b.one("Cast", [x], to=narrow_in)
    to = narrow_out if narrow_out is not None else onnx_type(tensor_dtype(target))
    if tensor_dtype(source) == tensor_dtype(target) and narrow_in == narrow_out:
        return [args[0]]
    result = bitcast(b, x, to)
    return [result if narrow_out is None else b.one("Cast", [result], to=TensorProto.FLOAT)]


def _between_widths(b: GraphBuilder, op: Any, x: str) -> str:
    """A bitcast between widths: the narrow type's trailing dimension holds the wide one's words, least
    significant first (little-endian, as XLA's), put together or taken apart with shifts of unsigned
    integers (floats through ``BitCast`` to the unsigned integer of their width)."""
    source, target = op.operands[0], op.results[0]
    if NARROW_FLOATS.get(_element(source)) or NARROW_FLOATS.get(_element(target)):
        b.refuse("a bitcast of float16 or bfloat16 between types of different widths")
    narrow, wide = sorted((tensor_dtype(source), tensor_dtype(target)), key=lambda d: d.itemsize)
    ratio, bits = wide.itemsize // narrow.itemsize, 8 * narrow.itemsize
    unsigned_narrow, unsigned_wide = np.dtype(f"uint{bits}"), np.dtype(f"uint{8 * wide.itemsize}")
    dtype = tensor_dtype(source)
    unsigned = unsigned_narrow if dtype == narrow else unsigned_wide
    x = bitcast(b, x, onnx_type(unsigned)) if dtype.kind == "f" else b.cast(x, unsigned)
    if dtype == narrow:
        words = [b.cast(element(b, x, i, -1), unsigned_wide) for i in range(ratio)]
        result = words[0]
        for i, word in enumerate(words[1:], 1):
            shifted = b.one("BitShift", [word, b.scalar(bits * i, unsigned_wide)], direction="LEFT")
            result = b.one("BitwiseOr", [result, shifted])
    else:
        mask = b.scalar((1 << bits) - 1, unsigned_wide)
        words = [b.cast(b.one("BitwiseAnd", [b.one("BitShift", [x, b.scalar(bits * i, unsigned_wide)],
                                                   direction="RIGHT"), mask]), unsigned_narrow) for i in range(ratio)]
        result = stacked(b, words)
    out = tensor_dtype(target)
    return bitcast(b, result, onnx_type(out)) if out.kind == "f" else b.cast(result, out)


def _reduce_precision_bits(b: GraphBuilder, op: Any, x: str, exponent: int, mantissa: int) -> str:
    """XLA's ``reduce_precision`` of a float32 or float64 ``x`` on its bits."""
    dtype = tensor_dtype(op.operands[0])
    width = dtype.itemsize
    bits, src_exponent, src_mantissa = (32, 8, 23) if width == 4 else (64, 11, 52)
    unsigned = unsigned_of(dtype)

    def u(value: int) -> str:
        return b.scalar(value, unsigned)

    word = bitcast(b, x, onnx_type(unsigned))
    if mantissa < src_mantissa:
        shift = src_mantissa - mantissa
        last = 1 << shift
        last_bit = b.one("BitShift", [b.one("BitwiseAnd", [word, u(last)]), u(shift)], direction="RIGHT")
        rounding = b.one("Add", [last_bit, u((last >> 1) - 1)])
        word = b.one("BitwiseAnd", [b.one("Add", [word, rounding]), u(~(last - 1) & ((1 << bits) - 1))])
    if exponent < src_exponent:
        sign_mask = 1 << (bits - 1)
        exponent_mask = ((1 << src_exponent) - 1) << src_mantissa
        bias, reduced_bias = (1 << (src_exponent - 1)) - 1, (1 << (exponent - 1)) - 1
        x_exponent = b.one("BitwiseAnd", [word, u(exponent_mask)])
        overflows = b.one("Greater", [x_exponent, u((bias + reduced_bias) << src_mantissa)])
        underflows = b.one("LessOrEqual", [x_exponent, u((bias - reduced_bias) << src_mantissa)])
        signed_zero = b.one("BitwiseAnd", [word, u(sign_mask)])
        signed_inf = b.one("BitwiseOr", [signed_zero, u(exponent_mask)])
        wide = signed_of(dtype)  # Where of unsigned 32/64-bit: in the signed type of the width
        word = b.cast(b.one("Where", [overflows, b.cast(signed_inf, wide), b.one(
            "Where", [underflows, b.cast(signed_zero, wide), b.cast(word, wide)])]), unsigned)
    result = bitcast(b, word, onnx_type(dtype))
    return b.one("Where", [b.one("IsNaN", [x]), x, result])


def reduce_precision(b: GraphBuilder, op: Any, args: Sequence[str], exponent: int, mantissa: int) -> list[str]:
    """``reduce_precision`` of a float32 or float64 operand to ``exponent`` and ``mantissa`` bits, exactly."""
    if _element(op.operands[0]) not in ("f32", "f64"):
        b.refuse(f"reduce_precision of {_element(op.operands[0])} (computed in float32 here) to {exponent} "
                 f"exponent and {mantissa} mantissa bits other than float16, bfloat16 or its own")
    return [_reduce_precision_bits(b, op, args[0], exponent, mantissa)]


def total_order_key(b: GraphBuilder, v: str, dtype: np.dtype[Any]) -> str:
    """The signed integers of ``dtype``'s width (float32 or float64) that order as ``v``'s total order."""
    signed = signed_of(dtype)
    word = bitcast(b, v, onnx_type(signed))
    flipped = b.one("BitwiseXor", [word, b.scalar(np.iinfo(signed).max, signed)])
    return b.one("Where", [b.one("Less", [word, b.scalar(0, signed)]), flipped, word])


def total_order(b: GraphBuilder, direction: str, x: str, y: str, dtype: np.dtype[Any]) -> str:
    """``compare`` of floats ``x`` and ``y`` (``dtype``: float32 or float64) with ``TOTALORDER``."""
    return compared(b, direction, total_order_key(b, x, dtype), total_order_key(b, y, dtype))


#: ``stablehlo.reduce_precision`` and ``stablehlo.compare`` are the arithmetic module's, which hands
#: these cases here.
TABLE: dict[str, Translation] = {
    "stablehlo.bitcast_convert": _bitcast_convert,
}
