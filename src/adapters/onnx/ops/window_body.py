"""``reduce_window`` whose body is several elementwise operations (``lax.cumlogsumexp``, a custom reducer).

For static shapes and at most :data:`MAX_POSITIONS` positions per window,
the operand is padded with the init value as StableHLO pads it, and the
body's region is translated once per window position on whole strided
slices: ``acc = body(acc, slice)`` from ``acc = init``, in the row-major
order of the positions, as XLA's CPU loop over a window combines. The body
must be elementwise (the operations of :data:`ELEMENTWISE` on its 0-D
arguments), which makes a tensor of windows the same as each window's
scalars; another body is refused by name.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxport.adapters.onnx.builder import GraphBuilder, int_list, tensor_shape
from .common import Translation
from .window import ints_or, pad_tensor, padding_pairs

#: Positions per window translated at most (each is one translation of the body).
MAX_POSITIONS = 64
#: The operations a body may hold (elementwise on 0-D values).
ELEMENTWISE = frozenset(f"stablehlo.{name}" for name in (
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "abs", "negate", "exponential", "log",
    "log_plus_one", "exponential_minus_one", "compare", "select", "and", "or", "not", "xor", "is_finite",
    "constant", "convert", "sqrt", "rsqrt", "tanh", "logistic", "power", "remainder", "sign", "floor", "ceil",
    "clamp", "return"))


def general_reduce_window(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    """The reduce_window ``op`` of one operand whose body is several elementwise operations."""
    block = op.regions[0].blocks[0]
    others = sorted({o.operation.name for o in block.operations} - ELEMENTWISE)
    if others:
        b.refuse(f"a reduce_window body holding {', '.join(others)} (only elementwise bodies are translated)")
    shape = tensor_shape(op.operands[0])
    if None in shape:
        b.refuse("a reduce_window of a body of several operations over dynamic dimensions")
    rank = len(shape)
    window = int_list(op.attributes["window_dimensions"])
    if int(np.prod(window)) > MAX_POSITIONS:
        b.refuse(f"a reduce_window of a body of several operations over more than {MAX_POSITIONS} positions")
    strides = ints_or(op, "window_strides", rank, 1)
    dilations = ints_or(op, "window_dilations", rank, 1)
    base = ints_or(op, "base_dilations", rank, 1)
    padding = padding_pairs(op, "padding", rank)
    x, init = args
    x = pad_tensor(b, x, shape, [p[0] for p in padding], [p[1] for p in padding], [d - 1 for d in base], init)
    sizes = [max(0, int(s or 0) + (int(s or 0) - 1) * (d - 1)) + lo + hi
             for s, d, (lo, hi) in zip(shape, base, padding)]
    counts = [max(0, (s - ((w - 1) * d + 1)) // st + 1) if s >= (w - 1) * d + 1 else 0
              for s, w, d, st in zip(sizes, window, dilations, strides)]
    acc = b.one("Expand", [init, b.int64s(counts)])
    assert b.run_block is not None  # set by the walker
    for offset in itertools.product(*(range(w) for w in window)):
        starts = [o * d for o, d in zip(offset, dilations)]
        ends = [s + (c - 1) * st + 1 if c else s for s, c, st in zip(starts, counts, strides)]
        part = b.one("Slice", [x, b.int64s(starts), b.int64s(ends), b.int64s(list(range(rank))), b.int64s(strides)])
        (acc,) = b.run_block(b, block, [acc, part])
    return [acc]


#: No operation of its own: ``stablehlo.reduce_window`` is :mod:`.pool`'s, which hands these bodies here.
TABLE: dict[str, Translation] = {}
