"""ONNX translations of the windowed operations: ``pad``, ``reverse``, ``reduce_window``, ``select_and_scatter``.

``pad`` is a ``Pad`` for the positive edges, a ``Slice`` for the negative
ones, and per dimension with interior padding an ``Unsqueeze``, a ``Pad``
of the new dimension and a ``Reshape`` merging it back (the elements
interleaved with padding). ``select_and_scatter`` (the gradient of a max
or min pool) selects with ``MaxPool``'s indices (the first maximum of each
window, as StableHLO's ``GE`` selector keeps it) and adds the source there
with ``ScatterElements``.

For ``reduce_window`` (pools, cumulative reductions) the operand is padded
as StableHLO pads it (with the init value; base dilation is interior
padding), then each window is reduced: with ``MaxPool``/``AveragePool`` over
the window dimensions moved last (a floating-point max, min or sum over at
most three window dimensions; ``MaxPool`` skips NaN where StableHLO's max
propagates it, so windows holding a NaN are NaN by a second pool of
``IsNaN``), or else, for static shapes, by combining one strided ``Slice``
per window position (any dtype, exact for integers). A cumulative reduction
(what ``jnp.cumsum``, ``lax.cummax`` and the like lower to: one window
dimension as long as the operand's, padded on one side) is ``CumSum`` or
log2(n) doubling steps. A body of several elementwise operations
(``lax.cumlogsumexp``, a custom reducer; those of
:data:`.common.ELEMENTWISE`, which make a tensor of windows the same as each
window's scalars) is translated once per window position on whole strided
slices, ``acc = body(acc, slice)`` from ``acc = init`` in the row-major
order of the positions, as XLA's CPU loop over a window combines: for static
shapes and at most :data:`MAX_WINDOW` positions per window; another body is
refused by name. The ``stablehlo.dynamic_reduce_window`` custom call (a
reduce_window over symbolic dimensions) is an ONNX ``Loop`` over the
window's positions.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
from jaxlib.mlir import ir
from onnx import numpy_helper

from jaxport.adapters.onnx.builder import BOOL, F32, F64, I32, I64, GraphBuilder, int_list, tensor_dtype, tensor_shape
from .common import (
    ELEMENTWISE, Translation, block_reducer, direction, function_named, identity_of, is_identity, reducer,
    reversed_along, transposed, wide_dtype
)

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
    x, value = (b.cast(a, wide, dtype) for a in args[:2])
    padded = pad_tensor(b, x, tensor_shape(op.operands[0]), int_list(op.attributes["edge_padding_low"]),
                        int_list(op.attributes["edge_padding_high"]), int_list(op.attributes["interior_padding"]),
                        value)
    return [b.cast(padded, dtype, wide)]


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
    x, source, init = args  # float32 or float64 (float16 and bfloat16 are float32 inside): computed as they are
    if how == "LE":
        x = b.one("Neg", [x])
    x = pad_tensor(b, x, shape, [p[0] for p in padding], [p[1] for p in padding], [0] * rank,
                   b.scalar(-np.inf, dtype))
    wins = [a for a in range(rank) if window[a] > 1 or strides[a] > 1]
    if len(wins) > 3:
        b.refuse("a select_and_scatter over more than three window dimensions")
    if wins:
        pooled_in, perm, moved_shape = to_pool_layout(b, x, rank, wins)
        _, indices = b.node("MaxPool", [pooled_in], 2, kernel_shape=[window[a] for a in wins],
                            strides=[strides[a] for a in wins])
        moved_source = transposed(b, source, perm)
        zeros = b.one("ConstantOfShape", [b.one("Reshape", [b.one("Size", [pooled_in]), b.int64s([1])])],
                      value=numpy_helper.from_array(np.zeros(1, dtype=dtype)))
        scattered = b.one("ScatterElements", [zeros, b.one("Reshape", [indices, b.int64s([-1])]),
                                              b.one("Reshape", [moved_source, b.int64s([-1])])],
                          axis=0, reduction="add")
        result = transposed(b, b.one("Reshape", [scattered, moved_shape]), [perm.index(a) for a in range(rank)])
    else:
        result = source
    result = _cut(b, result, [-p[0] for p in padding], [-p[1] for p in padding])  # the padding cut off again
    if not is_identity("Add", op.operands[2]):
        result = b.one("Add", [result, init])
    return [result]


#: Positions per window translated at most outside ONNX's pools (each a ``Slice``, combined or given to the body).
MAX_WINDOW = 64


class _Window(NamedTuple):
    """A ``reduce_window``'s window, per operand dimension: size, stride, dilation, base dilation, padding."""

    dimensions: list[int]
    strides: list[int]
    dilations: list[int]
    base: list[int]
    padding: list[tuple[int, int]]


def _window_of(op: Any, rank: int) -> _Window:
    """The window attributes of the ``reduce_window`` ``op`` (StableHLO's defaults where absent)."""
    return _Window(int_list(op.attributes["window_dimensions"]), ints_or(op, "window_strides", rank, 1),
                   ints_or(op, "window_dilations", rank, 1), ints_or(op, "base_dilations", rank, 1),
                   padding_pairs(op, "padding", rank))


def _padded(b: GraphBuilder, x: str, init: str, shape: Sequence[int | None],
            w: _Window) -> tuple[str, list[int | None]]:
    """``x`` padded with ``init`` as StableHLO pads a reduce_window's operand, and the padded shape."""
    x = pad_tensor(b, x, shape, [p[0] for p in w.padding], [p[1] for p in w.padding], [d - 1 for d in w.base], init)
    return x, [None if s is None else max(0, s + (s - 1) * (d - 1)) + lo + hi
               for s, d, (lo, hi) in zip(shape, w.base, w.padding)]


def _window_slices(b: GraphBuilder, x: str, padded: Sequence[int | None], w: _Window) -> tuple[list[int], list[str]]:
    """Per dimension the number of windows in ``x`` (padded, of static shape ``padded``), and per window
    position, in row-major order, the strided ``Slice`` holding that position of every window."""
    rank = len(padded)
    sizes = [int(p or 0) for p in padded]
    counts = [max(0, (s - ((n - 1) * d + 1)) // st + 1) if s >= (n - 1) * d + 1 else 0
              for s, n, d, st in zip(sizes, w.dimensions, w.dilations, w.strides)]
    parts = []
    for offset in itertools.product(*(range(n) for n in w.dimensions)):
        starts = [o * d for o, d in zip(offset, w.dilations)]
        ends = [s + (c - 1) * st + 1 if c else s for s, c, st in zip(starts, counts, w.strides)]
        parts.append(b.one("Slice", [x, b.int64s(starts), b.int64s(ends), b.int64s(list(range(rank))),
                                     b.int64s(w.strides)]))
    return counts, parts


def _reduce_window(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    if len(op.operands) != 2:
        b.refuse("a variadic reduce_window (several operands) has no ONNX translation here")
    shape = tensor_shape(op.operands[0])
    rank = len(shape)
    w = _window_of(op, rank)
    kind = reducer(op)
    if kind is None:
        return _general_reduce_window(b, op, args, shape, w)
    window, strides, dilations = w.dimensions, w.strides, w.dilations
    x, init, kind, wide = _widened(b, op, args, kind)
    cumulative = _cumulative_axis(shape, w)
    if cumulative is not None:
        return _finish(b, op, _scan(b, x, shape, wide, kind, *cumulative), init, kind, wide)
    x, padded = _padded(b, x, init, shape, w)
    wins = [a for a in range(rank) if window[a] > 1 or strides[a] > 1 or dilations[a] > 1]
    if not wins:
        result = x
    elif wide.kind == "f" and kind in ("Max", "Min", "Add") and len(wins) <= 3:
        result = _pooled(b, x, rank, wins, kind, [window[a] for a in wins], [strides[a] for a in wins],
                         [dilations[a] for a in wins], wide, [padded[a] for a in wins])
    else:
        if None in padded:
            b.refuse("a reduce_window of integers or booleans over dynamic dimensions")
        if int(np.prod(window)) > MAX_WINDOW:
            b.refuse(f"a reduce_window of more than {MAX_WINDOW} elements per window outside ONNX's pools")
        result = functools.reduce(lambda r, part: b.one(kind, [r, part]), _window_slices(b, x, padded, w)[1])
    return _finish(b, op, result, init, kind, wide)


def _general_reduce_window(b: GraphBuilder, op: Any, args: Sequence[str], shape: Sequence[int | None],
                           w: _Window) -> list[str]:
    """The reduce_window ``op`` of one operand whose body is several elementwise operations."""
    block = op.regions[0].blocks[0]
    others = sorted({o.operation.name for o in block.operations} - ELEMENTWISE)
    if others:
        b.refuse(f"a reduce_window body holding {', '.join(others)} (only elementwise bodies are translated)")
    if None in shape:
        b.refuse("a reduce_window of a body of several operations over dynamic dimensions")
    if int(np.prod(w.dimensions)) > MAX_WINDOW:
        b.refuse(f"a reduce_window of a body of several operations over more than {MAX_WINDOW} positions")
    x, padded = _padded(b, args[0], args[1], shape, w)
    counts, parts = _window_slices(b, x, padded, w)
    acc = b.one("Expand", [args[1], b.int64s(counts)])
    for part in parts:
        (acc,) = b.run(block, [acc, part])
    return [acc]


def _widened(b: GraphBuilder, op: Any, args: Sequence[str], kind: str) -> tuple[str, str, str, np.dtype[Any]]:
    """The operand and init value of the reduce_window ``op`` (``args[:2]``) in the dtype reduced in
    (:func:`.common.wide_dtype`), ``kind`` there (booleans reduce as int32: and as min, or as max), and that dtype."""
    dtype = tensor_dtype(op.results[0])
    wide = wide_dtype(dtype)
    kind = kind if wide == dtype else {"And": "Min", "Or": "Max"}.get(kind, kind)
    return b.cast(args[0], wide, dtype), b.cast(args[1], wide, dtype), kind, wide


def _finish(b: GraphBuilder, op: Any, result: str, init: str, kind: str, wide: np.dtype[Any]) -> list[str]:
    """The windows reduced in ``wide`` (``result``) combined by ``kind`` with ``op``'s init value ``init``
    (unless that is ``kind``'s identity), in ``op``'s result dtype."""
    if not is_identity(kind, op.operands[1]):
        result = b.one(kind, [result, init])
    dtype = tensor_dtype(op.results[0])
    if dtype == BOOL:
        return [b.one("Not", [b.one("Equal", [result, b.scalar(0, wide)])])]
    return [b.cast(result, dtype, wide)]


def _cumulative_axis(shape: Sequence[int | None], w: _Window) -> tuple[int, bool] | None:
    """The axis and direction of a cumulative reduction (what ``jnp.cumsum`` and the like lower to), else None."""
    window, padding = w.dimensions, w.padding
    axes = [a for a in range(len(shape)) if window[a] > 1]
    if len(axes) != 1 or any(v != 1 for v in (*w.strides, *w.dilations, *w.base)):
        return None
    a = axes[0]
    n = shape[a]
    if n is None or window[a] != n or any(p != (0, 0) for i, p in enumerate(padding) if i != a):
        return None
    if padding[a] not in ((n - 1, 0), (0, n - 1)):
        return None
    return a, padding[a] == (0, n - 1)


def _scan(b: GraphBuilder, x: str, shape: Sequence[int | None], wide: np.dtype[Any], kind: str, axis: int,
          reverse: bool) -> str:
    """The inclusive prefix reduction of ``x`` along ``axis``: ``CumSum``, or log2(n) doubling steps."""
    if kind == "Add" and wide in (I32, I64, F32,
                                  F64):
        return b.one("CumSum", [x, b.scalar(axis, I64)], reverse=int(reverse))
    n = int(shape[axis] or 0)
    rank = len(shape)
    neutral = b.scalar(identity_of(kind, wide), wide)
    step = 1
    while step < n:
        pads = [0] * (2 * rank)
        pads[axis + (rank if reverse else 0)] = step
        shifted = b.one("Pad", [x, b.int64s(pads), neutral], mode="constant")
        start, end = (step, step + n) if reverse else (0, n)
        shifted = b.one("Slice", [shifted, b.int64s([start]), b.int64s([end]), b.int64s([axis])])
        x = b.one(kind, [x, shifted])
        step *= 2
    return x


def _pooled(b: GraphBuilder, x: str, rank: int, wins: Sequence[int], kind: str, kernel: list[int],
            strides: list[int], dilations: list[int], wide: np.dtype[Any], sizes: Sequence[int | None]) -> str:
    """The windows reduced by ONNX pools over the window dimensions moved last.

    Where a window dimension may be shorter than a window (a symbolic
    size), the pools would fail: the input grows by a window's extent less
    one, and the result is cut to the count of whole windows (0 included).
    """
    pooled_in, perm, moved_shape = to_pool_layout(b, x, rank, wins)
    extents = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    guarded = any(n is None or n < e for n, e in zip(sizes, extents))
    counts = ""
    if guarded:
        spatial = b.one("Slice", [b.one("Shape", [pooled_in]), b.int64s([2]), b.int64s([2 + len(wins)])])
        reach = b.one("Add", [spatial, b.int64s([s - e for s, e in zip(strides, extents)])])
        counts = b.one("Div", [b.one("Max", [reach, b.int64s([0])]), b.int64s(strides)])

    def pool(op_type: str, tensor: str, pad_value: Any) -> str:
        if guarded:
            pads = [0] * (2 * (2 + len(wins)))
            for i, e in enumerate(extents):
                pads[2 + len(wins) + 2 + i] = e - 1
            tensor = b.one("Pad", [tensor, b.int64s(pads), b.scalar(pad_value, wide)], mode="constant")
        pooled = b.one(op_type, [tensor], kernel_shape=kernel, strides=strides, dilations=dilations)
        if guarded:
            axes = b.int64s(list(range(2, 2 + len(wins))))
            pooled = b.one("Slice", [pooled, b.int64s([0] * len(wins)), counts, axes])
        return pooled

    if kind == "Add":
        y = b.one("Mul", [pool("AveragePool", pooled_in, 0), b.scalar(int(np.prod(kernel)), wide)])
    elif kind == "Max":
        y = pool("MaxPool", pooled_in, -np.inf)
    else:
        y = b.one("Neg", [pool("MaxPool", b.one("Neg", [pooled_in]), -np.inf)])
    if kind in ("Max", "Min"):  # MaxPool skips NaN, StableHLO's max propagates it
        nan = pool("MaxPool", b.cast(b.one("IsNaN", [pooled_in]), wide), 0)
        y = b.one("Where", [b.cast(nan, BOOL), b.scalar(np.nan, wide), y])
    return from_pool_layout(b, y, rank, wins, perm, moved_shape)


def static_ints(value: Any) -> list[int] | None:
    """The integers of a value made of constants (``constant``, ``concatenate``, ``reshape``, ``convert``)."""
    owner = value.owner
    if not isinstance(owner, (ir.Operation, ir.OpView)):
        return None
    if owner.name == "stablehlo.constant":
        return [int(v) for v in np.array(ir.DenseElementsAttr(owner.attributes["value"])).reshape(-1)]
    if owner.name in ("stablehlo.reshape", "stablehlo.convert"):
        return static_ints(owner.operands[0])
    if owner.name == "stablehlo.concatenate":
        parts = [static_ints(v) for v in owner.operands]
        return None if any(p is None for p in parts) else [i for p in parts for i in p or []]
    return None


def _dynamic_reduce_window(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    """``stablehlo.dynamic_reduce_window`` (a reduce_window over symbolic dimensions): an ONNX ``Loop``.

    Window sizes, strides, dilations and padding are tensors computed from
    the dimensions; each step of the loop combines one window position, a
    strided ``Slice`` of the padded operand, into the result (exact for
    every dtype and any values; as many steps as the window has elements).
    """
    if len(op.operands) != 7 or len(op.results) != 1:
        b.refuse("a variadic dynamic_reduce_window")
    called = ir.ArrayAttr(op.attributes["called_computations"])
    function = function_named(op, ir.FlatSymbolRefAttr(called[0]).value)
    kind = block_reducer(function.regions[0].blocks[0]) if function is not None else None
    if kind is None:
        b.refuse("a dynamic_reduce_window body other than one add, max, min, multiply, and, or")
    base = static_ints(op.operands[4])
    if base is None or any(d != 1 for d in base):
        b.refuse("a dynamic_reduce_window with base dilations not all 1 at conversion")
    shape = tensor_shape(op.operands[0])
    rank = len(shape)
    x, init, kind, wide = _widened(b, op, args, kind)
    window, strides, dilations = (b.as_int64(args[i], op.operands[i]) for i in (2, 3, 5))
    padding = b.as_int64(args[6], op.operands[6])
    low = b.one("Reshape", [b.one("Slice", [padding, b.int64s([0]), b.int64s([1]), b.int64s([1])]), b.int64s([-1])])
    high = b.one("Reshape", [b.one("Slice", [padding, b.int64s([1]), b.int64s([2]), b.int64s([1])]), b.int64s([-1])])
    zeros = b.int64s([0])
    grown = b.one("Pad", [x, b.one("Concat", [b.one("Max", [low, zeros]), b.one("Max", [high, zeros])], axis=0),
                          init], mode="constant")
    grown_shape = b.one("Shape", [grown])
    cut_low = b.one("Max", [b.one("Neg", [low]), zeros])
    padded = b.one("Slice", [grown, cut_low, b.one("Sub", [grown_shape, b.one("Max", [b.one("Neg", [high]), zeros])]),
                             b.int64s(list(range(rank)))])
    one = b.int64s([1])
    extent = b.one("Add", [b.one("Mul", [b.one("Sub", [window, one]), dilations]), one])
    reach = b.one("Add", [b.one("Sub", [b.one("Shape", [padded]), extent]), strides])
    counts = b.one("Div", [b.one("Max", [reach, zeros]), strides])  # whole windows, 0 if none
    return _finish(b, op, _window_loop(b, padded, counts, (window, strides, dilations), kind, wide, rank), init,
                   kind, wide)


def _window_loop(b: GraphBuilder, padded: str, counts: str, window_strides_dilations: tuple[str, str, str],
                 kind: str, wide: np.dtype[Any], rank: int) -> str:
    """A ``Loop`` over the window's positions, each combining one strided ``Slice`` of ``padded``."""
    window, strides, dilations = window_strides_dilations
    zeros, one = b.int64s([0]), b.int64s([1])
    inner = [b.one("ReduceProd", [b.one("Slice", [window, b.int64s([d + 1]), b.int64s([rank])]), zeros], keepdims=1)
             for d in range(rank)]
    inner_sizes = inner[0] if rank == 1 else b.one("Concat", inner, axis=0)
    steps = b.one("ReduceProd", [window, zeros], keepdims=0)
    start = b.one("Expand", [b.scalar(identity_of(kind, wide), wide), counts])

    def body(c: GraphBuilder, step: str, carried: list[str]) -> list[str]:
        offset = c.one("Mod", [c.one("Div", [step, inner_sizes]), window])
        first = c.one("Mul", [offset, dilations])
        last = c.one("Max", [c.one("Add", [first, c.one("Add", [c.one("Mul", [
            c.one("Sub", [counts, one]), strides]), one])]), first])
        part = c.one("Slice", [padded, first, last, b.int64s(list(range(rank))), strides])
        return [c.one(kind, [carried[0], part])]

    return b.loop(steps, [(start, (wide, rank))], body)[0]


CUSTOM_CALLS: dict[str, Translation] = {
    "stablehlo.dynamic_reduce_window": _dynamic_reduce_window,
}

TABLE: dict[str, Translation] = {
    "stablehlo.pad": _pad,
    "stablehlo.reduce_window": _reduce_window,
    "stablehlo.reverse": _reverse,
    "stablehlo.select_and_scatter": _select_and_scatter,
}
