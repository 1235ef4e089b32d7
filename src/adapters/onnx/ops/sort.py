"""ONNX translations of ``sort`` (any comparator) and of the ``chlo.top_k`` composite.

JAX's comparator for one key (``LT`` of the first operand, floats with
their zeros and NaNs made canonical) is ONNX ``TopK`` (smallest first, the
lower index first among equals) on a key ordering as the comparator does,
the operands gathered in its order. ONNX has no sort with another
comparator, so any other ``sort`` is a ranking: the
comparator region, translated once on the operands broadcast against
themselves (``[..., n, 1, ...]`` against ``[..., 1, n, ...]``), gives for
every pair whether one element goes before the other; an element's place
is the number of elements before it plus the number of equivalent ones
at lower positions (a stable sort, which every strict weak order gives
the same result for), and each operand is scattered to those places. It
is exact for every comparator the walk translates (JAX's, with NaNs and
signed zeros in total order, included), and quadratic in the sorted
dimension's length. Above :data:`MAX_SORTED` elements that matrix is too
large: an ONNX ``Loop`` takes :data:`BLOCK` elements ``j`` at a time,
translates the comparator on them against all ``k`` (``[..., block, n, ...]``)
both ways round, and adds up per element ``k`` the elements before it and the
equivalent ones at lower positions: the same places in ``n * BLOCK``
memory. Time stays quadratic: dimensions above :data:`MAX_LONG` are refused.

``chlo.top_k`` is ONNX ``TopK`` (largest first, the lower index first
among equals) on a key that orders values as XLA's total order does:
float32 values widened to float64 with ``-0`` just below ``+0``, the
infinities at float64's bounds and NaN above everything. Where the
conversion may raise the model to opset 26 (``BitCast``), the key is the
float's bits in total order (:func:`.bitcast.total_order_key`), as XLA's: a
NaN with its sign set (what ``0/0`` gives on x86) last. Below opset 26 ONNX
cannot read a NaN's sign bit, and such a NaN is ordered as a positive one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from jaxport.adapters.onnx.builder import F64, I64, GraphBuilder, tensor_dtype, tensor_shape
from .bitcast import BITCAST_OPSET, total_order_key
from .common import Translation, dim_size, direction, iota_of, splat_value, wide_dtype

#: The longest sorted dimension ranked at once (its comparison matrix is n * n per row).
MAX_SORTED = 4096
#: Elements compared against all the others per iteration of a longer dimension's ranking.
BLOCK = 512
#: The longest sorted dimension translated (n * n comparisons).
MAX_LONG = 1 << 16


def _sort(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    axis = ir.IntegerAttr(op.attributes["dimension"]).value
    shape = tensor_shape(op.operands[0])
    axis = axis % len(shape)
    key = _ascending_key(b, op, args[0]) if _is_jax_single_key(op) else None
    if key is not None:
        count = b.one("Shape", [args[0]], start=axis, end=axis + 1)
        _, order = b.node("TopK", [key, count], 2, axis=axis, largest=0, sorted=1)
        return [b.one("GatherElements", [a, order], axis=axis) for a in args]
    length = shape[axis]
    if length is not None and length > MAX_SORTED:
        return _ranked_in_blocks(b, op, args, axis)
    pairs = []
    for name in args:
        pairs += [b.one("Unsqueeze", [name, b.int64s([axis + 1])]), b.one("Unsqueeze", [name, b.int64s([axis])])]
    before = b.run(op.regions[0].blocks[0], pairs)[0]  # [..., j, k, ...]: element j goes before k
    swapped = list(range(len(shape) + 1))
    swapped[axis], swapped[axis + 1] = axis + 1, axis
    after = b.one("Transpose", [before], perm=swapped)  # element k goes before j
    ramp = iota_of(b, dim_size(b, args[0], axis))
    lower = b.one("Less", [b.one("Unsqueeze", [ramp, b.int64s([0])]), b.one("Unsqueeze", [ramp, b.int64s([1])])])
    place = _places(b, before, after, lower, axis, axis + 1, list(range(2, len(shape) - axis + 1)))
    return [b.one("ScatterElements", [a, place, a], axis=axis) for a in args]


def _ranked_in_blocks(b: GraphBuilder, op: Any, args: Sequence[str], axis: int) -> list[str]:
    """The operands of ``sort`` ``op`` sorted along ``axis`` by ranking them :data:`BLOCK` elements at a time."""
    shape = tensor_shape(op.operands[0])
    length = shape[axis]
    if length is None or length > MAX_LONG:
        b.refuse(f"a sort of more than {MAX_LONG} elements along its dimension (its ONNX form is quadratic)")
    rank = len(shape)
    trailing = list(range(2, 2 + rank - axis - 1))
    n = b.scalar(length, I64)
    ramp = iota_of(b, n)
    trips = b.scalar((length + BLOCK - 1) // BLOCK, I64)
    zeros = b.one("Expand", [b.scalar(0, I64), b.one("Shape", [args[0]])])

    def body(c: GraphBuilder, t: str, counted: list[str]) -> list[str]:
        start = c.one("Mul", [t, c.scalar(BLOCK, I64)])
        end = c.one("Min", [c.one("Add", [start, c.scalar(BLOCK, I64)]), n])
        block = [c.one("Slice", [a, c.one("Unsqueeze", [start, c.int64s([0])]),
                                 c.one("Unsqueeze", [end, c.int64s([0])]), c.int64s([axis])]) for a in args]
        j_first, k_first = [], []
        for whole, part in zip(args, block):
            rows, columns = (c.one("Unsqueeze", [part, c.int64s([axis + 1])]),
                             c.one("Unsqueeze", [whole, c.int64s([axis])]))
            j_first += [rows, columns]
            k_first += [columns, rows]
        before = c.run(op.regions[0].blocks[0], j_first)[0]  # [..., j, k, ...]: j goes before k
        after = c.run(op.regions[0].blocks[0], k_first)[0]  # [..., j, k, ...]: k goes before j
        lower = c.one("Less", [c.one("Unsqueeze", [c.one("Range", [start, end, c.scalar(1, I64)]), c.int64s([1])]),
                               c.one("Unsqueeze", [ramp, c.int64s([0])])])
        return [c.one("Add", [counted[0], _places(c, before, after, lower, axis, axis, trailing)])]

    (place,) = b.loop(trips, [(zeros, (I64, rank))], body)
    return [b.one("ScatterElements", [a, place, a], axis=axis) for a in args]


def _places(b: GraphBuilder, before: str, after: str, lower: str, axis: int, ties_axis: int,
            trailing: list[int]) -> str:
    """Each element's place in a stable sort: how many go before it (``before``, reduced over ``axis``) plus how
    many equivalent ones (neither before nor ``after``) lie at lower positions (``lower``, the ``trailing``
    dimensions added; reduced over ``ties_axis``)."""
    if trailing:
        lower = b.one("Unsqueeze", [lower, b.int64s(trailing)])
    equivalent = b.one("Not", [b.one("Or", [before, after])])
    smaller = b.one("ReduceSum", [b.cast(before, I64), b.int64s([axis])], keepdims=0)
    ties = b.one("ReduceSum", [b.cast(b.one("And", [equivalent, lower]), I64), b.int64s([ties_axis])], keepdims=0)
    return b.one("Add", [smaller, ties])


def _is_jax_single_key(op: Any) -> bool:
    """Whether the comparator is JAX's for one key: ``LT`` of the first operand's pair (floats made canonical)."""
    block = op.regions[0].blocks[0]
    ops = [o for o in block.operations if o.operation.name != "stablehlo.constant"]
    names = [o.operation.name.split(".")[-1] for o in ops]
    if names not in (["compare", "return"], _CANONICAL):
        return False
    last = ops[-2]
    if direction(last) != "LT" or list(ops[-1].operands) != list(last.results):
        return False
    first, second = block.arguments[0], block.arguments[1]
    if len(ops) == 2:
        return list(last.operands) == [first, second]
    kind = stablehlo.ComparisonTypeAttr(last.attributes["compare_type"]).value
    return kind == "TOTALORDER" and [_canonicalized(v) for v in last.operands] == [first, second]


#: The operations (constants aside) of JAX's comparator for one float key: zeros and NaNs of both sides
#: made canonical, then LT.
_CANONICAL = ["compare", "select", "compare", "select"] * 2 + ["compare", "return"]


def _canonicalized(value: Any) -> Any:
    """``x`` where ``value`` is ``select(x != x, +NaN, select(x == 0, 0, x))``, else None."""
    outer = value.owner
    if outer.name != "stablehlo.select" or not _is_constant(outer.operands[1], "nan"):
        return None
    inner = outer.operands[2].owner
    if not isinstance(inner, (ir.Operation, ir.OpView)) or inner.name != "stablehlo.select" or not _is_constant(
            inner.operands[1], "zero"):
        return None
    x = inner.operands[2]
    nan_test, zero_test = outer.operands[0].owner, inner.operands[0].owner
    if list(nan_test.operands) != [x, x] or not zero_test.operands[0] == x:
        return None
    return x


def _is_constant(value: Any, which: str) -> bool:
    found = splat_value(value)
    if not isinstance(found, float):
        return False
    return bool(np.isnan(found) and not np.signbit(found)) if which == "nan" else found == 0.0


def _ascending_key(b: GraphBuilder, op: Any, x: str) -> str | None:
    """A key ``TopK`` orders as the comparator orders the first operand (ties: equal keys), else None."""
    dtype = tensor_dtype(op.operands[0])
    if dtype.kind == "f":
        return None if dtype == F64 else _float64_key(b, b.cast(x, F64))
    if dtype == np.dtype(np.uint64):
        return None
    return b.cast(x, wide_dtype(dtype), dtype)  # booleans: int32


def _float64_key(b: GraphBuilder, key: str) -> str:
    """A float64 ``key`` with its infinities at float64's bounds and NaN above everything, for ``TopK``."""
    big = float(np.finfo(np.float64).max)
    key = b.one("Where", [b.one("IsInf", [key]), b.one("Mul", [b.one("Sign", [key]), b.scalar(big, F64)]), key])
    return b.one("Where", [b.one("IsNaN", [key]), b.scalar(np.inf, F64), key])


def _top_k(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    attrs = ir.DictAttr(op.attributes["composite_attributes"])
    k = ir.IntegerAttr(attrs["k"]).value
    dtype = tensor_dtype(op.operands[0])
    rank = len(tensor_shape(op.operands[0]))
    x = args[0]
    if dtype.kind == "f" and b.max_opset >= BITCAST_OPSET:  # XLA's total order, NaN's sign read from its bits
        key = total_order_key(b, x, dtype)  # (float16 and bfloat16 are float32 inside)
    elif dtype.kind == "f":
        if dtype == F64:
            b.refuse("a top_k of float64 (its total-order key needs a wider float)")
        key = b.cast(x, F64)
        zero = b.scalar(0, F64)
        negative_zero = b.one("And", [b.one("Equal", [key, zero]), b.one("Less", [b.one("Reciprocal", [key]), zero])])
        key = _float64_key(b, b.one("Where", [negative_zero, b.scalar(-1e-300, F64), key]))
    else:
        key = b.cast(x, wide_dtype(dtype), dtype)  # booleans: int32
    _, indices = b.node("TopK", [key, b.int64s([k])], 2, axis=rank - 1, largest=1, sorted=1)
    values = b.one("GatherElements", [x, indices], axis=rank - 1)
    return [values, b.cast(indices, tensor_dtype(op.results[1]))]


TABLE: dict[str, Translation] = {
    "stablehlo.sort": _sort,
}

COMPOSITES: dict[str, Translation] = {
    "chlo.top_k": _top_k,
}
