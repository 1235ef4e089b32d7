"""ONNX translations of ``gather`` and ``dynamic_gather`` along one operand dimension.

This covers the forms ``jnp.take``, embedding lookups and ``x[:, 0]``
produce: one start index per result position, along one collapsed operand
dimension ``a``, every other dimension taken from 0 for its slice size.
That is ONNX ``Gather(axis=a)`` of the operand sliced to the slice sizes,
its result transposed to StableHLO's order (offset dimensions where
``offset_dims`` says, batch dimensions elsewhere). The start indices are
clamped into the operand first, as StableHLO clamps them (ONNX Runtime
fails on an index out of range instead). The batched gather of
``jnp.take_along_axis`` is ``GatherElements``. Several start dimensions and
other batched gathers go to :func:`jaxport.adapters.onnx.ops.scatter.general_gather`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from jaxlib.mlir.dialects import stablehlo

from jaxport.adapters.onnx.builder import I32, I64, GraphBuilder, int_list, tensor_dtype, tensor_shape
from .common import Translation, dim_size, transposed
from .scatter import general_gather


def _take(b: GraphBuilder, op: Any, operand: str, indices: str, sizes: list[int] | None,
          size_tensor: str | None) -> str:
    numbers = stablehlo.GatherDimensionNumbers(op.attributes["dimension_numbers"])
    if list(numbers.operand_batching_dims) or list(numbers.start_indices_batching_dims):
        return _along_axis(b, op, operand, indices, numbers, sizes, size_tensor)
    start_map, collapsed = list(numbers.start_index_map), list(numbers.collapsed_slice_dims)
    shape, index_shape = tensor_shape(op.operands[0]), tensor_shape(op.operands[1])
    vector_dim = int(numbers.index_vector_dim)
    batch_rank = len(index_shape) - (vector_dim < len(index_shape))
    if len(start_map) != 1 or collapsed not in ([], start_map) or (not collapsed and batch_rank):
        return general_gather(b, op, operand, indices, None if sizes is not None else size_tensor)
    axis = start_map[0]
    indices, index_type = _index_vectors(b, op, indices, vector_dim)
    others = [d for d in range(len(shape)) if d != axis]
    if sizes is not None:
        short = [d for d in others if shape[d] is None or sizes[d] != shape[d]]
        if short:
            operand = b.one("Slice", [operand, b.int64s([0] * len(short)),
                                      b.int64s([sizes[d] for d in short]), b.int64s(short)])
    elif others and size_tensor is not None:
        ends = b.one("Gather", [size_tensor, b.int64s(others)], axis=0)
        operand = b.one("Slice", [operand, b.int64s([0] * len(others)), ends, b.int64s(others)])
    if not collapsed:
        size = b.int64s([sizes[axis]]) if sizes is not None else b.one(
            "Gather", [size_tensor or "", b.int64s([axis])], axis=0)
        return _window(b, operand, indices, index_type, axis, size)
    indices = _clamped(b, indices, index_type, operand, axis, shape[axis])
    gathered = b.one("Gather", [operand, indices], axis=axis)
    onnx_order = ([("o", d) for d in range(axis)] + [("b", k) for k in range(batch_rank)]
                  + [("o", d) for d in range(axis + 1, len(shape))])
    offsets = iter(("o", d) for d in others)
    batches = iter(("b", k) for k in range(batch_rank))
    offset_dims = set(int_list(numbers.offset_dims))
    wanted = [next(offsets) if i in offset_dims else next(batches) for i in range(len(onnx_order))]
    return transposed(b, gathered, [onnx_order.index(tag) for tag in wanted])


def _along_axis(b: GraphBuilder, op: Any, operand: str, indices: str, numbers: Any, sizes: list[int] | None,
                size_tensor: str | None) -> str:
    """The gather of ``jnp.take_along_axis``: ONNX ``GatherElements`` along the one dimension not batched.

    Every operand dimension but ``a`` is a batching dimension, at the same
    position in the indices, and each start index picks one element of ``a``.
    """
    shape, index_shape = tensor_shape(op.operands[0]), tensor_shape(op.operands[1])
    batching = list(numbers.operand_batching_dims)
    start_map, vector_dim = list(numbers.start_index_map), int(numbers.index_vector_dim)
    axis = start_map[0] if len(start_map) == 1 else -1
    if (len(start_map) != 1 or list(numbers.collapsed_slice_dims) != start_map
            or list(numbers.start_indices_batching_dims) != batching
            or sorted([*batching, axis]) != list(range(len(shape)))
            or len(index_shape) - (vector_dim < len(index_shape)) != len(shape)):
        return general_gather(b, op, operand, indices, None if sizes is not None else size_tensor)
    indices, index_type = _index_vectors(b, op, indices, vector_dim)
    indices = _clamped(b, indices, index_type, operand, axis, shape[axis])
    return b.one("GatherElements", [operand, indices], axis=axis)


def _index_vectors(b: GraphBuilder, op: Any, indices: str, vector_dim: int) -> tuple[str, np.dtype[Any]]:
    """The start indices of a gather of one start dimension without their vector dimension, and their dtype:
    int32 or int64 (those ONNX's gathers take; others cast to int64)."""
    if vector_dim < len(tensor_shape(op.operands[1])):
        indices = b.one("Squeeze", [indices, b.int64s([vector_dim])])
    index_type = tensor_dtype(op.operands[1])
    if index_type not in (I32, I64):
        indices, index_type = b.cast(indices, I64), I64
    return indices, index_type


def _window(b: GraphBuilder, operand: str, index: str, dtype: np.dtype[Any], axis: int, size: str) -> str:
    """``size`` (a [1] int64 value) elements of ``axis`` from ``index``, clamped as StableHLO clamps it."""
    start = b.one("Reshape", [b.cast(index, I64, dtype), b.int64s([1])])
    extent = b.one("Shape", [operand], start=axis, end=axis + 1)
    start = b.one("Min", [b.one("Max", [start, b.int64s([0])]), b.one("Sub", [extent, size])])
    return b.one("Slice", [operand, start, b.one("Add", [start, size]), b.int64s([axis])])


def _clamped(b: GraphBuilder, indices: str, dtype: np.dtype[Any], operand: str, axis: int,
             size: int | None) -> str:
    """The indices clamped into ``[0, size - 1]``, as StableHLO clamps a start index."""
    high = b.scalar(size - 1, dtype) if size is not None else b.one(
        "Sub", [b.cast(dim_size(b, operand, axis), dtype), b.scalar(1, dtype)])
    return b.one("Min", [b.one("Max", [indices, b.scalar(0, dtype)]), high])


TABLE: dict[str, Translation] = {
    "stablehlo.gather": lambda b, op, args: [
        _take(b, op, args[0], args[1], int_list(op.attributes["slice_sizes"]), None)],
    "stablehlo.dynamic_gather": lambda b, op, args: [
        _take(b, op, args[0], args[1], None, b.as_int64(args[2], op.operands[2]))],
}
