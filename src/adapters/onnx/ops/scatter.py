"""ONNX translations of ``gather`` and ``scatter`` in their general forms.

Both compute, for each position of the index tensor's batch dimensions,
the full start index into the operand (``start_index_map`` /
``scatter_dims_to_operand_dims`` from the index vector, the iota of the
paired index dimension for a batching dimension, 0 elsewhere), then the
index of every element of the window (start plus the window's own
coordinates). A gather clamps each start into ``[0, dim - slice size]``
as StableHLO does, reads with ``GatherND``, drops the collapsed and
batching dimensions and puts batch and offset dimensions where the
dimension numbers say. A scatter skips a window that does not lie inside
the operand (what XLA does; ONNX Runtime would fail instead): the
elements of the windows kept are selected (``Compress``) and scattered by
one ``ScatterElements`` into the flattened operand itself, with the update
computation's reduction (none for set, add, mul, min, max), in their
order: the operand is copied once. Where no two windows can overlap
(:mod:`jaxport.adapters.onnx.ops.disjoint`), a ``ScatterND`` writes them
into the operand in its own shape (no reshape after it, which ONNX Runtime
would copy into a graph output). The simple gathers (``jnp.take``,
embeddings, ``x[:, i]``) stay with :mod:`jaxport.adapters.onnx.ops.gather`, which hands the others here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo
from onnx import numpy_helper

from jaxport.adapters.onnx.builder import BOOL, F32, I32, I64, GraphBuilder, int_list, tensor_dtype, tensor_shape
from .disjoint import disjoint_windows
from .common import ELEMENTWISE, Translation, dim_size, iota_of, reducer, transposed, where, where_selects

#: The operations a body applied by ``x.at[i].apply(f)`` may hold (elementwise on its 0-D argument).
APPLIED = ELEMENTWISE | frozenset(f"stablehlo.{name}" for name in (
    "sine", "cosine", "tan", "atan2", "cbrt", "round_nearest_even", "round_nearest_afz"))
_SCATTER_REDUCTIONS = {"Add": "add", "Mul": "mul", "Max": "max", "Min": "min", "Or": "max", "And": "min"}


def full_starts(b: GraphBuilder, op: Any, indices: str, vector_dim: int, index_map: Sequence[int],
                operand_batching: Sequence[int], batching: Sequence[int]) -> tuple[str, int]:
    """``[batch..., operand rank]`` int64: each position's start index into ``op``'s operand (unclamped), and the
    batch rank, from the ``indices`` (``op``'s second operand; index vectors along ``vector_dim``, batching
    dimensions ``batching``), their vector dimension moved last (added if absent)."""
    index_shape, operand_rank = tensor_shape(op.operands[1]), len(tensor_shape(op.operands[0]))
    rank = len(index_shape)
    batch_rank = rank - (vector_dim < rank)
    vectors = b.as_int64(indices, op.operands[1])
    perm = [d for d in range(rank) if d != vector_dim] + [vector_dim]
    if vector_dim == rank:
        vectors = b.one("Unsqueeze", [vectors, b.int64s([rank])])
    elif perm != list(range(rank)):
        vectors = b.one("Transpose", [vectors], perm=perm)
    index_batching = [d - (d > vector_dim) for d in batching]
    column_shape = b.one("Concat", [b.one("Shape", [vectors], start=0, end=batch_rank), b.int64s([1])], axis=0)
    columns = []
    for d in range(operand_rank):
        if d in index_map:
            k = list(index_map).index(d)
            columns.append(b.one("Slice", [vectors, b.int64s([k]), b.int64s([k + 1]), b.int64s([batch_rank])]))
        elif d in operand_batching:
            axis = index_batching[list(operand_batching).index(d)]
            ramp = iota_of(b, dim_size(b, vectors, axis))
            shape = [1] * (batch_rank + 1)
            shape[axis] = -1
            columns.append(b.one("Expand", [b.one("Reshape", [ramp, b.int64s(shape)]), column_shape]))
        else:
            columns.append(b.one("ConstantOfShape", [column_shape], value=numpy_helper.from_array(
                np.zeros(1, dtype=np.int64))))
    return columns[0] if len(columns) == 1 else b.one("Concat", columns, axis=batch_rank), batch_rank


def window_indices(b: GraphBuilder, starts: str, batch_rank: int, window: Sequence[int],
                   window_shape: str | None = None) -> str:
    """``[batch..., *window, R]``: start plus every coordinate of a ``window`` (static, else ``window_shape``)."""
    rank = len(window)
    spread = b.one("Unsqueeze", [starts, b.int64s(list(range(batch_rank, batch_rank + rank)))])
    if window_shape is None:
        grid = b.constant(np.moveaxis(np.indices(window, dtype=np.int64), 0, -1), "grid")
    else:
        axes = []
        for d in range(rank):
            size = b.one("Squeeze", [b.one("Slice", [window_shape, b.int64s([d]), b.int64s([d + 1])]), b.int64s([0])])
            ramp = iota_of(b, size)
            placed = b.one("Reshape", [ramp, b.int64s([-1 if i == d else 1 for i in range(rank)])])
            axes.append(b.one("Unsqueeze", [b.one("Expand", [placed, window_shape]), b.int64s([rank])]))
        grid = axes[0] if rank == 1 else b.one("Concat", axes, axis=rank)
    return b.one("Add", [spread, grid])


def general_gather(b: GraphBuilder, op: Any, operand: str, indices: str, size_tensor: str | None = None) -> str:
    """Any ``gather`` (or ``dynamic_gather``, its slice sizes in ``size_tensor``), indices clamped as StableHLO says."""
    numbers = stablehlo.GatherDimensionNumbers(op.attributes["dimension_numbers"])
    rank = len(tensor_shape(op.operands[0]))
    sizes = int_list(op.attributes["slice_sizes"]) if size_tensor is None else [0] * rank
    starts, batch_rank = full_starts(b, op, indices, int(numbers.index_vector_dim), list(numbers.start_index_map),
                                     list(numbers.operand_batching_dims), list(numbers.start_indices_batching_dims))
    size_value = b.int64s(sizes) if size_tensor is None else size_tensor
    high = b.one("Sub", [b.one("Shape", [operand]), size_value])
    starts = b.one("Max", [b.one("Min", [starts, high]), b.int64s([0])])
    gathered = b.one("GatherND", [operand, window_indices(b, starts, batch_rank, sizes, size_tensor)])
    dropped = sorted({*numbers.collapsed_slice_dims, *numbers.operand_batching_dims})
    if dropped:
        gathered = b.one("Squeeze", [gathered, b.int64s([batch_rank + d for d in dropped])])
    offset_dims = set(int_list(numbers.offset_dims))
    result_rank = batch_rank + rank - len(dropped)
    batches, offsets = iter(range(batch_rank)), iter(range(batch_rank, result_rank))
    perm = [next(offsets) if i in offset_dims else next(batches) for i in range(result_rank)]
    return transposed(b, gathered, perm)


def _scatter(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    if len(op.operands) != 3:
        b.refuse("a variadic scatter (several operands) has no ONNX translation here")
    block = op.regions[0].blocks[0]
    body = list(block.operations)
    if len(body) == 1 and list(body[0].operands) == [block.arguments[1]]:
        reduction = "none"
    elif not any(block.arguments[1] in list(o.operands) for o in body):
        return [_apply(b, op, args, block)]
    else:
        kind = reducer(op)
        if kind is None or kind not in _SCATTER_REDUCTIONS:
            b.refuse("a scatter whose update computation is not set, add, multiply, min, max, and, or, "
                     "or a function of the operand alone")
        reduction = _SCATTER_REDUCTIONS[kind]
    return [_scattered(b, op, args, reduction, tensor_dtype(op.results[0]))]


def _apply(b: GraphBuilder, op: Any, args: Sequence[str], block: Any) -> str:
    """``x.at[i].apply(f)``: the body ignores the update. An element hit ``k`` times is ``f`` applied ``k``
    times (XLA's CPU applies the body once per hit): a ``Loop`` of max(hits) rounds of
    ``Where(hits > round, f(x), x)``, a single ``Where`` where the indices are declared unique."""
    others = sorted({o.operation.name for o in block.operations} - APPLIED)
    if others:
        b.refuse(f"a scatter applying a body holding {', '.join(others)} (only elementwise bodies are translated)")
    operand, indices, updates = args
    dtype = tensor_dtype(op.results[0])
    if not where_selects(dtype):
        b.refuse(f"ONNX Runtime has no Where for {dtype}")
    ones = b.one("Expand", [b.scalar(1, I32), b.one("Shape", [updates])])
    zeros = b.one("Expand", [b.scalar(0, I32), b.one("Shape", [operand])])
    hits = _scattered(b, op, [zeros, indices, ones], "add", I32)

    def applied(c: GraphBuilder, x: str, round_: str) -> str:
        (fx,) = c.run(block, [x, x])  # the update argument is not read
        return where(c, c.one("Greater", [hits, round_]), fx, x, dtype)  # untouched x in the exact branch

    if "unique_indices" in op.attributes and ir.BoolAttr(op.attributes["unique_indices"]).value:
        return applied(b, operand, b.scalar(0, I32))
    flat = b.one("Concat", [b.one("Reshape", [hits, b.int64s([-1])]), b.one("Expand", [b.scalar(0, I32), b.int64s(
        [1])])], axis=0)
    rounds = b.cast(b.one("ReduceMax", [flat], keepdims=0), I64)
    (result,) = b.loop(rounds, [(operand, op.results[0])],
                     lambda c, i, carried: [applied(c, carried[0], c.cast(i, I32))])
    return result


def _scattered(b: GraphBuilder, op: Any, args: Sequence[str], reduction: str, dtype: np.dtype[Any]) -> str:
    """``op``'s scatter of ``args`` (operand, indices, updates of ``dtype``) with ONNX's ``reduction``."""
    numbers = stablehlo.ScatterDimensionNumbers(op.attributes["scatter_dimension_numbers"])
    update_shape = tensor_shape(op.operands[2])
    rank = len(tensor_shape(op.operands[0]))
    window_dims = int_list(numbers.update_window_dims)
    inserted = sorted({*numbers.inserted_window_dims, *numbers.input_batching_dims})
    window = [1] * rank
    for d, u in zip([d for d in range(rank) if d not in inserted], window_dims):
        size = update_shape[u]
        if size is None:
            b.refuse("a scatter with dynamic window sizes")
        window[d] = size
    operand, indices, updates = args
    computed = dtype
    if dtype == BOOL or (reduction != "none" and dtype.itemsize < 4):
        computed = F32 if dtype.kind == "f" else I32
        operand, updates = b.cast(operand, computed), b.cast(updates, computed)
    starts, batch_rank = full_starts(b, op, indices, int(numbers.index_vector_dim),
                                     list(numbers.scattered_dims_to_operand_dims), list(numbers.input_batching_dims),
                                     list(numbers.scatter_indices_batching_dims))
    operand_shape = b.one("Shape", [operand])
    inside = b.one("And", [b.one("GreaterOrEqual", [starts, b.int64s([0])]),
                           b.one("LessOrEqual", [starts, b.one("Sub", [operand_shape, b.int64s(window)])])])
    inside = b.one("Cast", [b.one("ReduceMin", [b.cast(inside, I32), b.int64s([batch_rank])],
                                  keepdims=0)], to=9)  # BOOL
    elements = window_indices(b, starts, batch_rank, window)
    inside = b.one("Unsqueeze", [inside, b.int64s(list(range(batch_rank, batch_rank + rank)))])
    update_scatter = [d for d in range(len(update_shape)) if d not in window_dims]
    flat = b.int64s([-1])
    kept = b.one("Reshape", [b.one("Expand", [inside, b.one("Shape", [elements], start=0, end=-1)]), flat])
    values = b.one("Compress", [b.one("Reshape", [transposed(b, updates, update_scatter + window_dims), flat]), kept],
                   axis=0)
    if rank and disjoint_windows(op):  # each element written once: into the operand's own shape, no reshape
        places = b.one("Compress", [b.one("Reshape", [elements, b.int64s([-1, rank])]), kept], axis=0)
        return b.cast(b.one("ScatterND", [operand, places, values], reduction=reduction), dtype, computed)
    strides = [b.one("ReduceProd", [b.one("Slice", [operand_shape, b.int64s([d + 1]), b.int64s([rank])]),
                                    b.int64s([0])], keepdims=1) for d in range(rank)]
    stride = strides[0] if rank == 1 else b.one("Concat", strides, axis=0)
    linear = b.one("ReduceSum", [b.one("Mul", [elements, stride]), b.int64s([-1])], keepdims=0)
    positions = b.one("Compress", [b.one("Reshape", [linear, flat]), kept], axis=0)
    scattered = b.one("ScatterElements", [b.one("Reshape", [operand, flat]), positions, values], axis=0,
                      reduction=reduction)
    result = b.one("Reshape", [scattered, operand_shape], allowzero=1)
    return b.cast(result, dtype, computed)


TABLE: dict[str, Translation] = {
    "stablehlo.scatter": _scatter,
}
