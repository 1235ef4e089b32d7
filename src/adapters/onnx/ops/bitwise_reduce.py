"""ONNX translation of ``reduce`` with an ``and``, ``or`` or ``xor`` body on integers, or ``xor`` on booleans,
and of integer products and 64-bit sums.

ONNX has no bitwise reduction, and ONNX Runtime's integer ``ReduceProd``
saturates where XLA's product wraps: the reduced dimensions are moved to the
front and flattened into one, and a ``Loop`` over it folds each slice into
the init value with ``BitwiseAnd``/``BitwiseOr``/``BitwiseXor`` (``Xor``
on booleans) or, for integer products and 64-bit sums, ``Mul``/``Add``
(which wrap), exactly, in any order (the operations are associative and
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
from .linalg import INTEGER_WIDER

_BODIES = {"stablehlo.and": "BitwiseAnd", "stablehlo.or": "BitwiseOr", "stablehlo.xor": "BitwiseXor"}


def bitwise_body(op: Any) -> str | None:
    """The ONNX operator of a ``reduce`` body that is one ``and``, ``or`` or ``xor`` of its two arguments."""
    return block_reducer(op.regions[0].blocks[0], _BODIES)


def bitwise_reduce(b: GraphBuilder, op: Any, args: Sequence[str], operator: str) -> list[str]:
    """``reduce`` of one operand with the bitwise ``operator`` (``Xor`` for a boolean ``BitwiseXor``)."""
    dtype = tensor_dtype(op.results[0])
    if dtype == np.dtype(np.bool_):
        operator = {"BitwiseXor": "Xor", "BitwiseAnd": "And", "BitwiseOr": "Or"}[operator]
    return [folded(b, op, args[0], args[1], operator, dtype)]


def wrapping_fold(b: GraphBuilder, op: Any, args: Sequence[str], operator: str) -> list[str]:
    """``reduce`` of integers with a ``multiply`` (``operator`` ``Mul``) or ``add`` (``Add``) body, wrapping
    as XLA's (ONNX Runtime's ReduceProd and ReduceSum saturate): folded in a ``Loop``, in int32 for
    narrower integers and int64 for uint32 and uint64 (the same modulo 2**bits), cast back."""
    dtype = tensor_dtype(op.results[0])
    wide = INTEGER_WIDER.get(dtype, dtype)
    x, init = (a if wide == dtype else b.cast(a, wide) for a in args[:2])
    product = folded(b, op, x, init, operator, wide)
    return [product if wide == dtype else b.cast(product, dtype)]


def folded(b: GraphBuilder, op: Any, x: str, init: str, operator: str, dtype: np.dtype[Any]) -> str:
    """``op``'s one operand ``x`` (of ``dtype``) reduced over its dimensions by ``operator`` from ``init``."""
    dims = int_list(op.attributes["dimensions"])
    rank = len(tensor_shape(op.operands[0]))
    kept = [d for d in range(rank) if d not in dims]
    if not dims:
        return x  # XLA's CPU reduction over no dimension is the operand (its init value unused)
    if dims + kept != list(range(rank)):
        x = b.one("Transpose", [x], perm=[*dims, *kept])
    rest = b.one("Shape", [x], start=len(dims))
    count = b.one("ReduceProd", [b.one("Shape", [x], start=0, end=len(dims))], keepdims=1)  # no -1: rest may be 0
    x = b.one("Reshape", [x, b.one("Concat", [count, rest], axis=0)], allowzero=1)
    start = b.one("Expand", [init, rest])
    child = b.child()
    index, condition, carried = child.fresh("index"), child.fresh("condition"), child.fresh("carried")
    piece = child.one("Gather", [x, index], axis=0)
    result = child.one(operator, [carried, piece])
    element = onnx_type(dtype)
    shape = list(tensor_shape(op.results[0]))
    outputs = [helper.make_tensor_value_info(child.one("Identity", [condition]), TensorProto.BOOL, []),
               helper.make_tensor_value_info(child.one("Identity", [result]), element, shape)]
    inputs = [helper.make_tensor_value_info(index, TensorProto.INT64, []),
              helper.make_tensor_value_info(condition, TensorProto.BOOL, []),
              helper.make_tensor_value_info(carried, element, shape)]
    body = helper.make_graph(child.nodes, b.fresh("reduce_body"), inputs, outputs)
    trips = b.one("Squeeze", [count, b.int64s([0])])
    return b.one("Loop", [trips, "", start], body=body)


#: No operation of its own: ``stablehlo.reduce`` is the reduction module's, which hands these bodies here.
TABLE: dict[str, Translation] = {}
