"""Integer ``convolution``: the wrapping sum XLA computes, from ONNX's exact ``ConvInteger`` on bytes.

ONNX Runtime convolves integers only as ``ConvInteger`` (8-bit operands,
an exact int32 result). The operands, converted to the result's integer
type first (as StableHLO's ``convolution`` with a wider result does),
(held in 32 or 64 bits for ONNX Runtime's ``Pad``) are split into the bytes of
their two's complement: modulo ``2**bits``
the convolution is the sum over byte pairs ``(i, j)`` with ``i + j`` below
the width in bytes of ``2**(8 (i + j))`` times the ``ConvInteger`` of byte
``i`` of the input and byte ``j`` of the kernel. Each of those is exact in
int32 while a window holds at most 33,025 elements (``255**2`` each); the
sum runs in int64 (below ``2**60``) and is wrapped to the result's type,
which is XLA's wrapping result. A larger window, or 64-bit integers, are
refused. The translation of the layouts, padding and groups is
:mod:`.conv`'s, which calls :func:`integer_conv` in place of ``Conv``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jaxport.adapters.onnx.builder import I64, GraphBuilder
from .common import unsigned_of

_U8 = np.dtype(np.uint8)
#: The most elements a window may hold for ``ConvInteger``'s int32 sums of byte products to be exact.
MAX_WINDOW = (2**31 - 1) // (255 * 255)


def _bytes(b: GraphBuilder, x: str, wide: np.dtype[Any], count: int) -> list[str]:
    """The ``count`` lowest bytes of ``x`` (an integer of ``wide``) as uint8 tensors, least significant first."""
    unsigned = unsigned_of(wide)
    word = x if wide == unsigned else b.cast(x, unsigned)
    return [b.cast(b.one("BitwiseAnd", [b.one("BitShift", [word, b.scalar(8 * k, unsigned)], direction="RIGHT")
                                        if k else word, b.scalar(255, unsigned)]), _U8) for k in range(count)]


def integer_conv(b: GraphBuilder, lhs: str, rhs: str, wide: np.dtype[Any], dtype: np.dtype[Any],
                 window: int | None, **attributes: Any) -> str:
    """``Conv(lhs, rhs, **attributes)`` of integer tensors of ``wide`` (the result type ``dtype``, or one
    of 32 or 64 bits holding it, which ONNX Runtime pads), wrapping to ``dtype`` as XLA's.

    ``window`` is how many elements one output sums (input features per
    group times the kernel's spatial size), None where unknown.
    """
    if dtype.itemsize > 4:
        b.refuse(f"a convolution of {dtype} (64-bit products have no exact ONNX Runtime kernel)")
    if window is None or window > MAX_WINDOW:
        b.refuse(f"an integer convolution whose window holds {window or 'an unknown number of'} elements, "
                 f"over the {MAX_WINDOW} ConvInteger sums exactly")
    x, w = _bytes(b, lhs, wide, dtype.itemsize), _bytes(b, rhs, wide, dtype.itemsize)
    total = None
    for i, xi in enumerate(x):
        for j, wj in enumerate(w):
            if i + j >= dtype.itemsize:
                continue
            term = b.cast(b.one("ConvInteger", [xi, wj], **attributes), I64)
            if i + j:
                term = b.one("Mul", [term, b.scalar(1 << (8 * (i + j)), I64)])
            total = term if total is None else b.one("Add", [total, term])
    assert total is not None
    bits = dtype.itemsize * 8
    unsigned = unsigned_of(dtype)
    wrapped = b.cast(b.one("BitwiseAnd", [total, b.scalar((1 << bits) - 1, I64)]), unsigned)
    return wrapped if dtype == unsigned else b.cast(wrapped, dtype)
