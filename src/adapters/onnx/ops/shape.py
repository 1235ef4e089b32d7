"""ONNX translations of StableHLO's shape operations, static and dynamic.

The dynamic ones (``dynamic_broadcast_in_dim``, ``dynamic_reshape``,
``real_dynamic_slice``, ``dynamic_iota``, ``get_dimension_size``) are what a
symbolic module computes its shapes with: their shape operands are int32
tensors computed in the graph from the inputs' dimensions, and become
int64 shape tensors for ONNX's ``Expand``, ``Reshape`` and ``Slice``. ONNX
``Reshape`` runs with ``allowzero=1``, so that a zero in a computed shape is
a zero (StableHLO's meaning), never "copy the input's dimension".

``dynamic_slice`` and ``dynamic_update_slice`` clamp each start index into
``[0, dim - size]`` as StableHLO does (the slice or the update always lies
inside the operand); ONNX's ``Slice`` clamps differently (it shortens the
slice) and ``ScatterND`` fails on an index out of range, so the starts are
clamped first. The update is written with ``ScatterND`` at the start plus
every coordinate of the update.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir

from jaxport.adapters.onnx.builder import GraphBuilder, int_list, tensor_dtype, tensor_shape
from .common import Translation, dim_size
from .elementwise import iota
from .scatter import window_indices


def broadcast(b: GraphBuilder, operand: str, operand_rank: int, dims: Sequence[int], rank: int,
              shape: str | None, pairs: bool = False) -> str:
    """The operand's dimension i put at result dimension ``dims[i]``, then expanded to ``shape``; ``pairs``: a
    complex operand's (real, imaginary) pairs, a trailing dimension that stays last."""
    order = sorted(range(operand_rank), key=lambda i: dims[i])
    if order != list(range(operand_rank)):
        operand = b.one("Transpose", [operand], perm=[*order, *([operand_rank] if pairs else [])])
    new_axes = [i for i in range(rank) if i not in set(dims)]
    if new_axes:
        operand = b.one("Unsqueeze", [operand, b.int64s(new_axes)])
    return operand if shape is None else b.one("Expand", [operand, shape])


def _broadcast_in_dim(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    dims = int_list(op.attributes["broadcast_dimensions"])
    source, result = tensor_shape(op.operands[0]), tensor_shape(op.results[0])
    if None in result:
        b.refuse("a static broadcast with a dynamic result type")
    if 0 in result:  # empty: ONNX Runtime's optimizer takes an Expand of a 1 to a 0 for a no-op
        return [b.constant(np.zeros(result, tensor_dtype(op.results[0])), "empty")]
    placed: list[int | None] = [1] * len(result)
    for i, d in enumerate(dims):
        placed[d] = source[i]
    needs_expand = list(result) != placed
    made = broadcast(b, args[0], len(source), dims, len(result),
                     b.int64s([d or 0 for d in result]) if needs_expand else None)
    if args[0] in b.known and not source:  # a scalar constant broadcast (a divisor, say)
        b.known[made] = np.broadcast_to(b.known[args[0]], [d or 0 for d in result])
    return [made]


def _dynamic_broadcast_in_dim(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    dims = int_list(op.attributes["broadcast_dimensions"])
    rank = len(tensor_shape(op.results[0]))
    shape = b.as_int64(args[1], op.operands[1])
    return [broadcast(b, args[0], len(tensor_shape(op.operands[0])), dims, rank, shape)]


def _reshape(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    result = tensor_shape(op.results[0])
    if result.count(None) > 1:
        b.refuse("a static reshape to more than one dynamic dimension")
    if None in result:
        return [b.one("Reshape", [args[0], b.int64s([-1 if d is None else d for d in result])])]
    return [b.one("Reshape", [args[0], b.int64s([d or 0 for d in result])], allowzero=1)]


def _slice(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    starts, limits, strides = (int_list(op.attributes[k]) for k in ("start_indices", "limit_indices", "strides"))
    return [b.one("Slice", [args[0], b.int64s(starts), b.int64s(limits), b.int64s(list(range(len(starts)))),
                            b.int64s(strides)])]


def _real_dynamic_slice(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    starts, limits, strides = (b.as_int64(args[i], op.operands[i]) for i in (1, 2, 3))
    axes = b.int64s(list(range(len(tensor_shape(op.operands[0])))))
    return [b.one("Slice", [args[0], starts, limits, axes, strides])]


def _concatenate(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    if len(args) == 1:
        return [args[0]]
    return [b.one("Concat", args, axis=ir.IntegerAttr(op.attributes["dimension"]).value)]


def _get_dimension_size(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    dimension = ir.IntegerAttr(op.attributes["dimension"]).value
    return [b.cast(dim_size(b, args[0], dimension), tensor_dtype(op.results[0]))]


def _dynamic_iota(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    dimension = ir.IntegerAttr(op.attributes["iota_dimension"]).value
    shape = b.as_int64(args[0], op.operands[0])
    size = b.one("Slice", [shape, b.int64s([dimension]), b.int64s([dimension + 1])])
    rank = len(tensor_shape(op.results[0]))
    return [iota(b, tensor_dtype(op.results[0]), dimension, rank, size, shape)]


def _starts(b: GraphBuilder, op: Any, args: Sequence[str], first: int, sizes: str, operand: str) -> str:
    """The start operands as one clamped int64 ``[rank]`` tensor."""
    parts = [b.one("Reshape", [b.as_int64(args[i], op.operands[i]), b.int64s([1])])
             for i in range(first, len(args))]
    starts = parts[0] if len(parts) == 1 else b.one("Concat", parts, axis=0)
    high = b.one("Sub", [b.one("Shape", [operand]), sizes])
    return b.one("Max", [b.one("Min", [starts, high]), b.int64s([0])])


def _dynamic_slice(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    sizes = int_list(op.attributes["slice_sizes"])
    if not sizes:
        return [b.one("Identity", [args[0]])]
    starts = _starts(b, op, args, 1, b.int64s(sizes), args[0])
    ends = b.one("Add", [starts, b.int64s(sizes)])
    return [b.one("Slice", [args[0], starts, ends, b.int64s(list(range(len(sizes))))])]


def _dynamic_update_slice(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    update_shape = tensor_shape(op.operands[1])
    if not update_shape:
        return [b.one("Identity", [args[1]])]
    window = [int(d or 0) for d in update_shape]
    dynamic = None in update_shape
    sizes = b.one("Shape", [args[1]]) if dynamic else b.int64s(window)
    starts = _starts(b, op, args, 2, sizes, args[0])
    indices = window_indices(b, starts, 0, window, sizes if dynamic else None)
    return [b.one("ScatterND", [args[0], indices, args[1]])]


TABLE: dict[str, Translation] = {
    # A sharding constraint in a module for one device (the translator refuses others): the value.
    "sdy.sharding_constraint": lambda b, op, args: [args[0]],
    "stablehlo.broadcast_in_dim": _broadcast_in_dim,
    "stablehlo.dynamic_broadcast_in_dim": _dynamic_broadcast_in_dim,
    "stablehlo.reshape": _reshape,
    "stablehlo.dynamic_reshape": lambda b, op, args: [
        b.one("Reshape", [args[0], b.as_int64(args[1], op.operands[1])], allowzero=1)],
    "stablehlo.transpose": lambda b, op, args: [b.one("Transpose", args, perm=int_list(op.attributes["permutation"]))],
    "stablehlo.slice": _slice,
    "stablehlo.real_dynamic_slice": _real_dynamic_slice,
    "stablehlo.concatenate": _concatenate,
    "stablehlo.get_dimension_size": _get_dimension_size,
    "stablehlo.dynamic_iota": _dynamic_iota,
    "stablehlo.dynamic_slice": _dynamic_slice,
    "stablehlo.dynamic_update_slice": _dynamic_update_slice,
}
