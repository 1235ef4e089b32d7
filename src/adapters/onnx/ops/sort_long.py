"""A ``sort`` by ranking, for dimensions too long for one comparison matrix: a ``Loop`` over blocks of rows.

:mod:`.sort` ranks a sort of any comparator with the comparator region on
the sorted dimension against itself, ``n * n`` comparisons at once; above
:data:`.sort.MAX_SORTED` elements that matrix is too large. Here an ONNX
``Loop`` takes :data:`BLOCK` elements ``j`` at a time, translates the
comparator on them against all ``k`` (``[..., block, n, ...]``) both ways
round, and adds up per element ``k`` the elements before it and the
equivalent ones at lower positions: the same places, the same stable
sort, in ``n * BLOCK`` memory. Time stays quadratic: dimensions above
:data:`MAX_LONG` are refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from onnx import TensorProto, helper

from jaxport.adapters.onnx.builder import GraphBuilder, tensor_shape
from .common import Translation

#: Elements compared against all the others per iteration.
BLOCK = 512
#: The longest sorted dimension translated (n * n comparisons).
MAX_LONG = 1 << 16
_I64 = np.dtype(np.int64)


def ranked_in_blocks(b: GraphBuilder, op: Any, args: Sequence[str], axis: int) -> list[str]:
    """The operands of ``sort`` ``op`` sorted along ``axis`` by ranking them :data:`BLOCK` elements at a time."""
    shape = tensor_shape(op.operands[0])
    length = shape[axis]
    if length is None or length > MAX_LONG:
        b.refuse(f"a sort of more than {MAX_LONG} elements along its dimension (its ONNX form is quadratic)")
    rank = len(shape)
    trailing = list(range(2, 2 + rank - axis - 1))
    n = b.scalar(length, _I64)
    ramp = b.one("Range", [b.scalar(0, _I64), n, b.scalar(1, _I64)])
    trips = b.scalar((length + BLOCK - 1) // BLOCK, _I64)
    assert b.run_block is not None  # set by the walker
    child = b.child()
    t, condition, counted = child.fresh("block"), child.fresh("condition"), child.fresh("counted")
    start = child.one("Mul", [t, child.scalar(BLOCK, _I64)])
    end = child.one("Min", [child.one("Add", [start, child.scalar(BLOCK, _I64)]), n])
    block = [child.one("Slice", [a, child.one("Unsqueeze", [start, child.int64s([0])]),
                                 child.one("Unsqueeze", [end, child.int64s([0])]), child.int64s([axis])])
             for a in args]
    j_first, k_first = [], []
    for whole, part in zip(args, block):
        rows, columns = (child.one("Unsqueeze", [part, child.int64s([axis + 1])]),
                         child.one("Unsqueeze", [whole, child.int64s([axis])]))
        j_first += [rows, columns]
        k_first += [columns, rows]
    before = b.run_block(child, op.regions[0].blocks[0], j_first)[0]  # [..., j, k, ...]: j goes before k
    after = b.run_block(child, op.regions[0].blocks[0], k_first)[0]  # [..., j, k, ...]: k goes before j
    lower = child.one("Less", [child.one("Unsqueeze", [child.one("Range", [start, end, child.scalar(1, _I64)]),
                                                       child.int64s([1])]),
                               child.one("Unsqueeze", [ramp, child.int64s([0])])])
    if trailing:
        lower = child.one("Unsqueeze", [lower, child.int64s(trailing)])
    equivalent = child.one("Not", [child.one("Or", [before, after])])
    smaller = child.one("ReduceSum", [child.cast(before, _I64), child.int64s([axis])], keepdims=0)
    ties = child.one("ReduceSum", [child.cast(child.one("And", [equivalent, lower]), _I64), child.int64s([axis])],
                     keepdims=0)
    total = child.one("Add", [counted, child.one("Add", [smaller, ties])])
    dims = [None if d is None else int(d) for d in shape]
    outputs = [helper.make_tensor_value_info(child.one("Identity", [condition]), TensorProto.BOOL, []),
               helper.make_tensor_value_info(child.one("Identity", [total]), TensorProto.INT64, dims)]
    inputs = [helper.make_tensor_value_info(t, TensorProto.INT64, []),
              helper.make_tensor_value_info(condition, TensorProto.BOOL, []),
              helper.make_tensor_value_info(counted, TensorProto.INT64, dims)]
    body = helper.make_graph(child.nodes, b.fresh("sort_body"), inputs, outputs)
    zeros = b.one("Expand", [b.scalar(0, _I64), b.one("Shape", [args[0]])])
    place = b.one("Loop", [trips, "", zeros], body=body)
    return [b.one("ScatterElements", [a, place, a], axis=axis) for a in args]


#: No operation of its own: ``stablehlo.sort`` is :mod:`.sort`'s, which hands long dimensions here.
TABLE: dict[str, Translation] = {}
