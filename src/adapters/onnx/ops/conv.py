"""The ONNX translation of ``convolution``: one ``Conv`` between transposes.

The input goes to ONNX's ``[batch, feature, spatial...]`` layout, the
kernel to ``[output feature, input feature, spatial...]``, the result back
to the operation's ``output`` layout. Padding (negative too) and input
(lhs) dilation are an explicit ``pad`` of the input with zeros (dilation is
interior padding, as in a transposed convolution), so ``Conv`` runs with
no padding of its own; kernel (rhs) dilation is ``Conv``'s ``dilations``, a
window reversal is a reversed kernel. Feature groups are ``Conv``'s
``group``; batch groups (the weight gradient of a grouped convolution)
fold the batch groups into the features first, as StableHLO's definition
(split the batch, convolve each part with its share of the output
features, concatenate) amounts to. ONNX Runtime's CPU ``Conv`` computes in
float32 (float16 and bfloat16 are float32 inside the graph); float64
convolutions are refused.

Integers: ONNX Runtime convolves them only as ``ConvInteger`` (8-bit
operands, an exact int32 result). The operands, converted to the result's
integer type first (as StableHLO's ``convolution`` with a wider result
does), (held in 32 or 64 bits for ONNX Runtime's ``Pad``) are split into the
bytes of their two's complement: modulo ``2**bits`` the convolution is the
sum over byte pairs ``(i, j)`` with ``i + j`` below the width in bytes of
``2**(8 (i + j))`` times the ``ConvInteger`` of byte ``i`` of the input and
byte ``j`` of the kernel. Each of those is exact in int32 while a window
holds at most 33,025 elements (``255**2`` each); the sum runs in int64
(below ``2**60``) and is wrapped to the result's type, which is XLA's
wrapping result. A larger window, or 64-bit integers, are refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib.mlir.dialects import stablehlo

from jaxport.adapters.onnx.builder import F32, I64, GraphBuilder, tensor_dtype, tensor_shape
from .common import Translation, reversed_along, transposed, unsigned_of, wide_dtype
from .window import ints_or, padding_pairs, pad_tensor

_U8 = np.dtype(np.uint8)
#: The most elements a window may hold for ``ConvInteger``'s int32 sums of byte products to be exact.
MAX_WINDOW = (2**31 - 1) // (255 * 255)



def _convolution(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    dtype = tensor_dtype(op.results[0])  # float16 and bfloat16 are float32 inside
    integer = dtype.kind in "iu" and all(tensor_dtype(v).kind in "iu" for v in op.operands)
    if not integer and (dtype != F32 or any(tensor_dtype(v) != dtype for v in op.operands)):
        b.refuse(f"ONNX Runtime convolves floating-point numbers in float32 (float16, bfloat16 too), not {dtype}")
    numbers = stablehlo.ConvDimensionNumbers(op.attributes["dimension_numbers"])
    spatial_in = list(numbers.input_spatial_dimensions)
    n = len(spatial_in)
    if n == 0:
        b.refuse("a convolution without spatial dimensions")
    strides = ints_or(op, "window_strides", n, 1)
    padding = padding_pairs(op, "padding", n)
    lhs_dilation = ints_or(op, "lhs_dilation", n, 1)
    rhs_dilation = ints_or(op, "rhs_dilation", n, 1)
    reversal = [bool(x) for x in op.attributes["window_reversal"]] if "window_reversal" in op.attributes else []
    groups = int(op.attributes["feature_group_count"].value) if "feature_group_count" in op.attributes else 1
    batch_groups = int(op.attributes["batch_group_count"].value) if "batch_group_count" in op.attributes else 1
    if groups > 1 and batch_groups > 1:
        b.refuse("a convolution with both feature and batch groups")
    wide = wide_dtype(dtype) if integer else F32  # integers held in a type ONNX Runtime's Pad takes
    lhs, rhs = (a if not integer or tensor_dtype(v) == wide else b.cast(a, wide) for a, v in zip(args, op.operands))
    lhs_perm = [int(numbers.input_batch_dimension), int(numbers.input_feature_dimension), *spatial_in]
    lhs_shape = tensor_shape(op.operands[0])
    lhs = transposed(b, lhs, lhs_perm)
    rhs = transposed(b, rhs, [int(numbers.kernel_output_feature_dimension),
                               int(numbers.kernel_input_feature_dimension), *numbers.kernel_spatial_dimensions])
    if any(reversal):
        axes = [2 + i for i, r in enumerate(reversal) if r]
        rhs = reversed_along(b, rhs, axes)
    if any(p != (0, 0) for p in padding) or any(d > 1 for d in lhs_dilation):
        lhs = pad_tensor(b, lhs, [lhs_shape[d] for d in lhs_perm], [0, 0, *(p[0] for p in padding)],
                         [0, 0, *(p[1] for p in padding)], [0, 0, *(d - 1 for d in lhs_dilation)],
                         b.scalar(0, wide))
    if batch_groups > 1:
        lhs = _batch_groups_to_features(b, lhs, n + 2, batch_groups)
    attributes = {"strides": strides, "dilations": rhs_dilation, "group": max(groups, batch_groups),
                  "pads": [0] * (2 * n)}
    if integer:
        kernel = tensor_shape(op.operands[1])
        window = None if None in kernel else int(np.prod([kernel[int(numbers.kernel_input_feature_dimension)],
                                                          *(kernel[d] for d in numbers.kernel_spatial_dimensions)]))
        result = _integer_conv(b, lhs, rhs, wide, dtype, window, **attributes)
    else:
        result = b.one("Conv", [lhs, rhs], **attributes)
    out = [int(numbers.output_batch_dimension), int(numbers.output_feature_dimension),
           *numbers.output_spatial_dimensions]
    return [transposed(b, result, [out.index(d) for d in range(n + 2)])]


def _batch_groups_to_features(b: GraphBuilder, lhs: str, rank: int, count: int) -> str:
    """``[N, C, ...]`` as ``[N / count, count * C, ...]``: batch part g becomes feature group g."""
    shape = b.one("Shape", [lhs])
    rest = b.one("Slice", [shape, b.int64s([1]), b.int64s([rank])])
    split = b.one("Reshape", [lhs, b.one("Concat", [b.int64s([count, -1]), rest], axis=0)])
    moved = b.one("Transpose", [split], perm=[1, 0, *range(2, rank + 1)])
    features = b.one("Mul", [b.one("Slice", [shape, b.int64s([1]), b.int64s([2])]), b.int64s([count])])
    spatial = b.one("Slice", [shape, b.int64s([2]), b.int64s([rank])])
    return b.one("Reshape", [moved, b.one("Concat", [b.int64s([-1]), features, spatial], axis=0)])


def _bytes(b: GraphBuilder, x: str, wide: np.dtype[Any], count: int) -> list[str]:
    """The ``count`` lowest bytes of ``x`` (an integer of ``wide``) as uint8 tensors, least significant first."""
    unsigned = unsigned_of(wide)
    word = b.cast(x, unsigned, wide)
    return [b.cast(b.one("BitwiseAnd", [b.one("BitShift", [word, b.scalar(8 * k, unsigned)], direction="RIGHT")
                                        if k else word, b.scalar(255, unsigned)]), _U8) for k in range(count)]


def _integer_conv(b: GraphBuilder, lhs: str, rhs: str, wide: np.dtype[Any], dtype: np.dtype[Any],
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
    return b.cast(wrapped, dtype, unsigned)


TABLE: dict[str, Translation] = {
    "stablehlo.convolution": _convolution,
}
