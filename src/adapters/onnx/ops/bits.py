"""ONNX translations of the bitwise operations: and, or, xor, not, shifts, popcnt, count_leading_zeros.

On booleans ``and``/``or``/``xor``/``not`` are the logical operators; on
integers the ``Bitwise*`` ones. ONNX's ``BitShift`` takes unsigned integers
only, so signed ones are shifted as the unsigned type of their width (a
cast keeps the bits); a shift by at least the bit width gives 0, or the
sign for an arithmetic right shift, as XLA's. ``popcnt`` and
``count_leading_zeros`` count bit by bit (ONNX has no such operator).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


from jaxport.adapters.onnx.builder import BOOL, I64, GraphBuilder, tensor_dtype
from .common import Translation, signed_of, unsigned_of, where



def _bitwise(bool_op: str, int_op: str) -> Translation:
    def translate(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
        dtype = tensor_dtype(op.results[0])
        return [b.one(bool_op if dtype == BOOL else int_op, args)]
    return translate


def _shift(direction: str) -> Translation:
    def translate(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
        dtype = tensor_dtype(op.results[0])
        if dtype.kind not in "iu":
            b.refuse("shifts of integers only")
        bits = dtype.itemsize * 8
        unsigned = unsigned_of(dtype)
        x, amount = (b.cast(a, unsigned, dtype) for a in args)
        beyond = b.one("GreaterOrEqual", [amount, b.scalar(bits, unsigned)])
        amount = b.one("Min", [amount, b.scalar(bits - 1, unsigned)]) if direction == "arithmetic" else where(
            b, beyond, b.scalar(0, unsigned), amount, unsigned)
        if direction == "arithmetic":
            negative = b.one("Less", [b.cast(x, signed_of(dtype)), b.scalar(0, signed_of(dtype))])
            filled = b.one("BitShift", [b.one("BitwiseNot", [x]), amount], direction="RIGHT")
            shifted = where(b, negative, b.one("BitwiseNot", [filled]),
                            b.one("BitShift", [x, amount], direction="RIGHT"), unsigned)
        else:
            shifted = b.one("BitShift", [x, amount], direction="LEFT" if direction == "left" else "RIGHT")
            shifted = where(b, beyond, b.scalar(0, unsigned), shifted, unsigned)
        return [b.cast(shifted, dtype, unsigned)]
    return translate


def _bit_count(leading_zeros: bool) -> Translation:
    """``popcnt`` (the bits set) or ``count_leading_zeros`` (the width less the bit length: how many right
    shifts leave something), counted shift by shift."""
    def translate(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
        dtype = tensor_dtype(op.results[0])
        bits, unsigned = dtype.itemsize * 8, unsigned_of(dtype)
        x = b.cast(args[0], unsigned, dtype)
        one = None if leading_zeros else b.scalar(1, unsigned)
        total = None
        for k in range(bits):
            shifted = b.one("BitShift", [x, b.scalar(k, unsigned)], direction="RIGHT") if k else x
            bit = b.cast(b.one("BitwiseAnd", [shifted, one]) if one else b.one(
                "Not", [b.one("Equal", [shifted, b.scalar(0, unsigned)])]), I64)
            total = bit if total is None else b.one("Add", [total, bit])
        assert total is not None
        return [b.cast(b.one("Sub", [b.scalar(bits, I64), total]) if leading_zeros else total, dtype)]
    return translate


TABLE: dict[str, Translation] = {
    "stablehlo.and": _bitwise("And", "BitwiseAnd"),
    "stablehlo.or": _bitwise("Or", "BitwiseOr"),
    "stablehlo.xor": _bitwise("Xor", "BitwiseXor"),
    "stablehlo.not": lambda b, op, args: [b.one("Not" if tensor_dtype(op.results[0]) == BOOL else "BitwiseNot", args)],
    "stablehlo.shift_left": _shift("left"),
    "stablehlo.shift_right_logical": _shift("logical"),
    "stablehlo.shift_right_arithmetic": _shift("arithmetic"),
    "stablehlo.popcnt": _bit_count(leading_zeros=False),
    "stablehlo.count_leading_zeros": _bit_count(leading_zeros=True),
}
