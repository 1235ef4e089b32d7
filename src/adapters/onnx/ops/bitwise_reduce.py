"""ONNX translation of ``reduce`` with an ``and``, ``or`` or ``xor`` body on integers, or ``xor`` on booleans.

ONNX has no bitwise reduction: the reduced dimensions are moved to the
front and flattened into one, and a ``Loop`` over it folds each slice into
the init value with ``BitwiseAnd``/``BitwiseOr``/``BitwiseXor`` (``Xor``
on booleans), exactly, in any order (the operations are associative and
commutative). An empty reduced dimension gives the init value, and a reduction
over no dimension the operand, as XLA's on the CPU.
(``and``/``or`` of booleans are the reduction module's ``ReduceMin``/``ReduceMax``.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from onnx import TensorProto, helper

from jaxport.adapters.onnx.builder import GraphBuilder, int_list, onnx_type, tensor_dtype, tensor_shape
from .common import Translation, block_reducer

_BODIES = {"stablehlo.and": "BitwiseAnd", "stablehlo.or": "BitwiseOr", "stablehlo.xor": "BitwiseXor"}


def bitwise_body(op: Any) -> str | None:
    """The ONNX operator of a ``reduce`` body that is one ``and``, ``or`` or ``xor`` of its two arguments."""
    return block_reducer(op.regions[0].blocks[0], _BODIES)


def bitwise_reduce(b: GraphBuilder, op: Any, args: Sequence[str], operator: str) -> list[str]:
    """``reduce`` of one operand with the bitwise ``operator`` (``Xor`` for a boolean ``BitwiseXor``)."""
    dtype = tensor_dtype(op.results[0])
    if dtype == np.dtype(np.bool_):
        operator = {"BitwiseXor": "Xor", "BitwiseAnd": "And", "BitwiseOr": "Or"}[operator]
    dims = int_list(op.attributes["dimensions"])
    rank = len(tensor_shape(op.operands[0]))
    kept = [d for d in range(rank) if d not in dims]
    x = args[0]
    if not dims:
        return [x]  # XLA's CPU reduction over no dimension is the operand (its init value unused)
    if dims + kept != list(range(rank)):
        x = b.one("Transpose", [x], perm=[*dims, *kept])
    rest = b.one("Shape", [x], start=len(dims))
    x = b.one("Reshape", [x, b.one("Concat", [b.int64s([-1]), rest], axis=0)])
    count = b.one("Shape", [x], start=0, end=1)
    start = b.one("Expand", [args[1], rest])
    child = b.child()
    index, condition, carried = child.fresh("index"), child.fresh("condition"), child.fresh("carried")
    piece = child.one("Gather", [x, index], axis=0)
    folded = child.one(operator, [carried, piece])
    element = onnx_type(dtype)
    shape = list(tensor_shape(op.results[0]))
    outputs = [helper.make_tensor_value_info(child.one("Identity", [condition]), TensorProto.BOOL, []),
               helper.make_tensor_value_info(child.one("Identity", [folded]), element, shape)]
    inputs = [helper.make_tensor_value_info(index, TensorProto.INT64, []),
              helper.make_tensor_value_info(condition, TensorProto.BOOL, []),
              helper.make_tensor_value_info(carried, element, shape)]
    body = helper.make_graph(child.nodes, b.fresh("reduce_body"), inputs, outputs)
    trips = b.one("Squeeze", [count, b.int64s([0])])
    return [b.one("Loop", [trips, "", start], body=body)]


#: No operation of its own: ``stablehlo.reduce`` is the reduction module's, which hands these bodies here.
TABLE: dict[str, Translation] = {}
