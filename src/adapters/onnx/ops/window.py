"""ONNX translations of ``pad``, ``reverse``, ``select_and_scatter``; padding and layout helpers for windows.

``pad`` is a ``Pad`` for the positive edges, a ``Slice`` for the negative
ones, and per dimension with interior padding an ``Unsqueeze``, a ``Pad``
of the new dimension and a ``Reshape`` merging it back (the elements
interleaved with padding). ``select_and_scatter`` (the gradient of a max
or min pool) selects with ``MaxPool``'s indices (the first maximum of each
window, as StableHLO's ``GE`` selector keeps it) and adds the source there
with ``ScatterElements``. ``reduce_window`` is :mod:`jaxport.adapters.onnx.ops.pool`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from onnx import numpy_helper

from jaxport.adapters.onnx.builder import GraphBuilder, int_list, tensor_dtype, tensor_shape
from .common import Translation, direction, is_identity, reducer, reversed_along, transposed, wide_dtype

def padding_pairs(op: Any, name: str, rank: int) -> list[tuple[int, int]]:
    """The (low, high) pairs of an ``[rank, 2]`` padding attribute (zeros where absent)."""
    if name not in op.attributes:
        return [(0, 0)] * rank
    flat = [int(x) for x in np.array(ir.DenseIntElementsAttr(op.attributes[name])).reshape(-1)]
    return [(flat[2 * i], flat[2 * i + 1]) for i in range(rank)]


def ints_or(op: Any, name: str, rank: int, default: int) -> list[int]:
    """An integer-array attribute, or ``rank`` times ``default`` where absent."""
    return int_list(op.attributes[name]) if name in op.attributes else [default] * rank


def pad_tensor(b: GraphBuilder, x: str, shape: Sequence[int | None], low: Sequence[int], high: Sequence[int],
               interior: Sequence[int], value: str) -> str:
    """``x`` padded as StableHLO pads: ``value`` (a 0-D name) at the edges (negative: cut) and between elements."""
    rank = len(shape)
    for axis in range(rank):
        if interior[axis] > 0:
            x = _interleave(b, x, shape, axis, interior[axis], value)
    positive = [max(v, 0) for v in low] + [max(v, 0) for v in high]
    if any(positive):
        x = b.one("Pad", [x, b.int64s(positive), value], mode="constant")
    return _cut(b, x, low, high)


def _cut(b: GraphBuilder, x: str, low: Sequence[int], high: Sequence[int]) -> str:
    """``x`` without the ``-low[a]`` first and ``-high[a]`` last elements of each dimension ``a`` where those
    are negative (StableHLO's negative padding)."""
    cut = [a for a in range(len(low)) if low[a] < 0 or high[a] < 0]
    if not cut:
        return x
    starts = [-low[a] if low[a] < 0 else 0 for a in cut]
    ends = [high[a] if high[a] < 0 else np.iinfo(np.int64).max for a in cut]
    return b.one("Slice", [x, b.int64s(starts), b.int64s(ends), b.int64s(cut)])


def _interleave(b: GraphBuilder, x: str, shape: Sequence[int | None], axis: int, gap: int, value: str) -> str:
    """``gap`` elements ``value`` between each two of ``x``'s along ``axis``."""
    rank = len(shape)
    spread = b.one("Unsqueeze", [x, b.int64s([axis + 1])])
    pads = [0] * (2 * (rank + 1))
    pads[rank + 1 + axis + 1] = gap
    spread = b.one("Pad", [spread, b.int64s(pads), value], mode="constant")
    full = b.one("Shape", [spread])
    merged = b.one("Mul", [b.one("Slice", [full, b.int64s([axis]), b.int64s([axis + 1])]),
                           b.int64s([gap + 1])])
    parts = [b.one("Slice", [full, b.int64s([0]), b.int64s([axis])]), merged,
             b.one("Slice", [full, b.int64s([axis + 2]), b.int64s([rank + 1])])]
    flat = b.one("Reshape", [spread, b.one("Concat", parts, axis=0)], allowzero=1)
    return b.one("Slice", [flat, b.int64s([0]), b.int64s([-gap]), b.int64s([axis])])


def _pad(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    dtype = tensor_dtype(op.results[0])
    wide = wide_dtype(dtype)
    x, value = (args[0], args[1]) if wide == dtype else (b.cast(args[0], wide), b.cast(args[1], wide))
    padded = pad_tensor(b, x, tensor_shape(op.operands[0]), int_list(op.attributes["edge_padding_low"]),
                        int_list(op.attributes["edge_padding_high"]), int_list(op.attributes["interior_padding"]),
                        value)
    return [padded if wide == dtype else b.cast(padded, dtype)]


def _reverse(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    dims = int_list(op.attributes["dimensions"])
    if not dims:
        return [b.one("Identity", args)]
    return [reversed_along(b, args[0], dims)]


def to_pool_layout(b: GraphBuilder, x: str, rank: int, wins: Sequence[int]) -> tuple[str, list[int], str]:
    """``x`` as ``[M, 1, *window dims]``; the permutation and the transposed shape to undo it."""
    perm = [a for a in range(rank) if a not in wins] + list(wins)
    moved = transposed(b, x, perm)
    moved_shape = b.one("Shape", [moved])
    spatial = b.one("Slice", [moved_shape, b.int64s([rank - len(wins)]), b.int64s([rank])])
    pooled_in = b.one("Reshape", [moved, b.one("Concat", [b.int64s([-1, 1]), spatial], axis=0)])
    return pooled_in, perm, moved_shape


def from_pool_layout(b: GraphBuilder, y: str, rank: int, wins: Sequence[int], perm: Sequence[int],
                     moved_shape: str) -> str:
    """The inverse of :func:`to_pool_layout` for a pooled ``y`` (``[M, 1, *window counts]``)."""
    lead = b.one("Slice", [moved_shape, b.int64s([0]), b.int64s([rank - len(wins)])])
    out_spatial = b.one("Slice", [b.one("Shape", [y]), b.int64s([2]), b.int64s([2 + len(wins)])])
    y = b.one("Reshape", [y, b.one("Concat", [lead, out_spatial], axis=0)], allowzero=1)
    return transposed(b, y, [perm.index(a) for a in range(rank)])


def _select_and_scatter(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    select = list(op.regions[0].blocks[0].operations)
    how = None
    if len(select) == 2 and select[0].operation.name == "stablehlo.compare":
        first = select[0]
        block_args = list(op.regions[0].blocks[0].arguments)
        if list(first.operands) == block_args:
            how = direction(first)
    if how not in ("GE", "LE") or reducer(op, 1) != "Add":
        b.refuse("a select_and_scatter other than a max or min pool's gradient (select GE/LE, scatter add)")
    shape = tensor_shape(op.operands[0])
    rank = len(shape)
    window = int_list(op.attributes["window_dimensions"])
    strides = ints_or(op, "window_strides", rank, 1)
    padding = padding_pairs(op, "padding", rank)
    dtype = tensor_dtype(op.results[0])
    if dtype.kind != "f" or any(lo < 0 or hi < 0 for lo, hi in padding):
        b.refuse("a select_and_scatter of integers or with negative padding")
    wide = wide_dtype(dtype)
    x, source, init = args
    if wide != dtype:
        x, source, init = b.cast(x, wide), b.cast(source, wide), b.cast(init, wide)
    if how == "LE":
        x = b.one("Neg", [x])
    x = pad_tensor(b, x, shape, [p[0] for p in padding], [p[1] for p in padding], [0] * rank,
                   b.scalar(-np.inf, wide))
    wins = [a for a in range(rank) if window[a] > 1 or strides[a] > 1]
    if len(wins) > 3:
        b.refuse("a select_and_scatter over more than three window dimensions")
    if wins:
        pooled_in, perm, moved_shape = to_pool_layout(b, x, rank, wins)
        _, indices = b.node("MaxPool", [pooled_in], 2, kernel_shape=[window[a] for a in wins],
                            strides=[strides[a] for a in wins])
        moved_source = transposed(b, source, perm)
        zeros = b.one("ConstantOfShape", [b.one("Reshape", [b.one("Size", [pooled_in]), b.int64s([1])])],
                      value=numpy_helper.from_array(np.zeros(1, dtype=wide)))
        scattered = b.one("ScatterElements", [zeros, b.one("Reshape", [indices, b.int64s([-1])]),
                                              b.one("Reshape", [moved_source, b.int64s([-1])])],
                          axis=0, reduction="add")
        result = transposed(b, b.one("Reshape", [scattered, moved_shape]), [perm.index(a) for a in range(rank)])
    else:
        result = source
    result = _cut(b, result, [-p[0] for p in padding], [-p[1] for p in padding])  # the padding cut off again
    if not is_identity("Add", op.operands[2]):
        result = b.one("Add", [result, init])
    return [result if wide == dtype else b.cast(result, dtype)]


TABLE: dict[str, Translation] = {
    "stablehlo.pad": _pad,
    "stablehlo.reverse": _reverse,
    "stablehlo.select_and_scatter": _select_and_scatter,
}
