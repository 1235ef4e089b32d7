"""ONNX translations of ``dynamic_slice`` and ``dynamic_update_slice``, start indices clamped.

StableHLO clamps each start index into ``[0, dim - size]`` (the slice or
the update always lies inside the operand); ONNX's ``Slice`` clamps
differently (it shortens the slice) and ``ScatterND`` fails on an index
out of range, so the starts are clamped first. The update is written with
``ScatterND`` at the start plus every coordinate of the update.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


from jaxport.adapters.onnx.builder import GraphBuilder, int_list, tensor_shape
from .common import Translation
from .scatter import window_indices


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
    "stablehlo.dynamic_slice": _dynamic_slice,
    "stablehlo.dynamic_update_slice": _dynamic_update_slice,
}

