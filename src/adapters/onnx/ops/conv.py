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
float32 (float16 and bfloat16 are float32 inside the graph); integers are
:mod:`.conv_integer`'s (``ConvInteger`` on bytes); float64 convolutions are
refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib.mlir.dialects import stablehlo

from jaxport.adapters.onnx.builder import F32, GraphBuilder, tensor_dtype, tensor_shape
from .common import Translation, reversed_along, transposed, wide_dtype
from .conv_integer import integer_conv
from .window import ints_or, padding_pairs, pad_tensor



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
        result = integer_conv(b, lhs, rhs, wide, dtype, window, **attributes)
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


TABLE: dict[str, Translation] = {
    "stablehlo.convolution": _convolution,
}
