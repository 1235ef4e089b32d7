"""``stablehlo.rng_bit_generator`` computed bit for bit as XLA's CPU backend computes it.

XLA expands the operation (``RngBitGeneratorExpander``; ``DEFAULT`` is
``PHILOX`` on the CPU) into integer arithmetic, which ONNX Runtime's
``Add``, ``Mul``, ``BitShift`` and ``Bitwise*`` kernels compute on uint32 and
uint64 (wrapping as XLA's). The state is ``u64[2]``, ``(key, counter)`` (and
``u64[3]`` for Philox: a 128-bit counter):

- ``THREE_FRY``: Threefry-2x32 (20 rounds) keyed by the key's two halves,
  of the counters ``state[1] + i`` for each element (32-bit outputs: the
  first even dimension, else the largest, split in two halves, one output
  word each; 64-bit: both words of one counter); the new counter is the old
  one plus the number of counters.
- ``PHILOX`` (and ``DEFAULT``): Philox-4x32 (10 rounds) keyed likewise, of
  the 128-bit counters ``(state[1], state[0])`` (``u64[2]``: XLA reverses
  it) ``+ i``, four 32-bit words each, taken in order (two 64-bit words);
  the new state is the key and the counter plus the number of blocks.

Outputs of 8 and 16 bits are 32-bit outputs truncated, as XLA's; signed
integer outputs have the unsigned ones' bits. Float outputs are refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxport.adapters.onnx.builder import I64, GraphBuilder, tensor_dtype, tensor_shape
from .common import Translation, element, iota_of, stacked, unsigned_of

U32, U64 = np.dtype(np.uint32), np.dtype(np.uint64)
_MASK = 0xFFFFFFFF
_ROTATIONS = (13, 15, 26, 6, 17, 29, 16, 24)
_PHILOX_W = (0x9E3779B9, 0xBB67AE85)
_PHILOX_M = (0xD2511F53, 0xCD9E8D57)


def _low(b: GraphBuilder, x: str) -> str:
    """The low 32 bits of a uint64 ``x``."""
    return b.cast(b.one("BitwiseAnd", [x, b.scalar(_MASK, U64)]), U32)


def _high(b: GraphBuilder, x: str) -> str:
    """The high 32 bits of a uint64 ``x``."""
    return b.cast(b.one("BitShift", [x, b.scalar(32, U64)], direction="RIGHT"), U32)


def _wide(b: GraphBuilder, low: str, high: str) -> str:
    """The uint64 of two uint32 halves."""
    return b.one("BitwiseOr", [b.cast(low, U64), b.one("BitShift", [b.cast(high, U64), b.scalar(32, U64)],
                                                       direction="LEFT")])


def _rotate(b: GraphBuilder, x: str, distance: int) -> str:
    """A uint32 ``x`` rotated left by ``distance`` bits."""
    return b.one("BitwiseOr", [b.one("BitShift", [x, b.scalar(distance, U32)], direction="LEFT"),
                               b.one("BitShift", [x, b.scalar(32 - distance, U32)], direction="RIGHT")])


def _counters(b: GraphBuilder, start: str, count: int) -> str:
    """``start + [0, 1, ..., count - 1]`` (uint64, wrapping)."""
    return b.one("Add", [b.cast(iota_of(b, b.scalar(count, I64)), U64), start])


def _threefry(b: GraphBuilder, x0: str, x1: str, key: str) -> tuple[str, str]:
    """Threefry-2x32 (20 rounds, as XLA's) of the words ``x0``, ``x1`` keyed by a uint64 ``key``."""
    ks = [_low(b, key), _high(b, key)]
    ks.append(b.one("BitwiseXor", [b.one("BitwiseXor", [b.scalar(0x1BD11BDA, U32), ks[0]]), ks[1]]))
    x0, x1 = b.one("Add", [x0, ks[0]]), b.one("Add", [x1, ks[1]])
    for group in range(5):
        for rotation in _ROTATIONS[4 * (group % 2):4 * (group % 2) + 4]:
            x0 = b.one("Add", [x0, x1])
            x1 = b.one("BitwiseXor", [x0, _rotate(b, x1, rotation)])
        x0 = b.one("Add", [x0, ks[(group + 1) % 3]])
        x1 = b.one("Add", [b.one("Add", [x1, ks[(group + 2) % 3]]), b.scalar(group + 1, U32)])
    return x0, x1


def _split(shape: Sequence[int]) -> int:
    """The dimension XLA splits a shape in halves along: the first even one, else the first largest."""
    even = [i for i, d in enumerate(shape) if d % 2 == 0]
    return even[0] if even else max(range(len(shape)), key=lambda i: (shape[i], -i))


def _three_fry(b: GraphBuilder, key: str, counter: str, shape: Sequence[int], bits: int) -> tuple[str, str]:
    """The output (``bits`` wide, of ``shape``) and the new counter."""
    axis = _split(shape) if bits == 32 and shape else None  # 32-bit words: the halves of one dimension
    half = shape if axis is None else [*shape[:axis], (shape[axis] + 1) // 2, 1, *shape[axis + 1:]]
    count = int(np.prod(half, dtype=np.int64))
    inputs = _counters(b, counter, count)
    x0, x1 = _threefry(b, _low(b, inputs), _high(b, inputs), key)
    if bits == 64:
        result = b.one("Reshape", [_wide(b, x0, x1), b.int64s(shape)], allowzero=1)
    elif axis is None:
        result = b.one("Reshape", [x0, b.int64s([])])
    else:
        halves = [b.one("Reshape", [x, b.int64s(half)], allowzero=1) for x in (x0, x1)]
        paired = b.one("Concat", halves, axis=axis + 1)
        whole = [*shape[:axis], 2 * half[axis], *shape[axis + 1:]]
        result = b.one("Reshape", [paired, b.int64s(whole)], allowzero=1)
        if whole[axis] != shape[axis]:
            result = b.one("Slice", [result, b.int64s([0]), b.int64s([shape[axis]]), b.int64s([axis])])
    return result, b.one("Add", [counter, b.scalar(count, U64)])


def _philox_rounds(b: GraphBuilder, x: list[str], key: str) -> list[str]:
    """Philox-4x32 (10 rounds) of the words ``x`` keyed by a uint64 ``key``."""
    k0, k1 = _low(b, key), _high(b, key)
    for _ in range(10):
        products = []
        for word, multiplier in ((x[0], _PHILOX_M[0]), (x[2], _PHILOX_M[1])):
            product = b.one("Mul", [b.cast(word, U64), b.scalar(multiplier, U64)])
            products.append((_high(b, product), _low(b, product)))
        (high0, low0), (high1, low1) = products
        x = [b.one("BitwiseXor", [b.one("BitwiseXor", [high1, x[1]]), k0]), low1,
             b.one("BitwiseXor", [b.one("BitwiseXor", [high0, x[3]]), k1]), low0]
        k0, k1 = b.one("Add", [k0, b.scalar(_PHILOX_W[0], U32)]), b.one("Add", [k1, b.scalar(_PHILOX_W[1], U32)])
    return x


def _plus(b: GraphBuilder, low: str, high: str, added: str) -> tuple[str, str]:
    """The 128-bit ``(low, high) + added`` (uint64 words; ``added`` broadcast)."""
    total = b.one("Add", [low, added])
    carry = b.cast(b.one("Less", [total, low]), U64)
    return total, b.one("Add", [high, carry])


def _philox(b: GraphBuilder, key: str, low: str, high: str, shape: Sequence[int], bits: int) -> tuple[str, str, str]:
    """The output (``bits`` wide, of ``shape``) and the new 128-bit counter."""
    count = int(np.prod(shape, dtype=np.int64))
    blocks = -(-count * (2 if bits == 64 else 1) // 4)
    low_i, high_i = _plus(b, low, high, _counters(b, b.scalar(0, U64), blocks))
    words = _philox_rounds(b, [_low(b, low_i), _high(b, low_i), _low(b, high_i), _high(b, high_i)], key)
    if bits == 64:
        words = [_wide(b, words[0], words[1]), _wide(b, words[2], words[3])]
    flat = b.one("Slice", [b.one("Reshape", [stacked(b, words), b.int64s([-1])]), b.int64s([0]), b.int64s([count])])
    result = b.one("Reshape", [flat, b.int64s(list(shape))], allowzero=1)
    new_low, new_high = _plus(b, low, high, b.scalar(blocks, U64))
    return result, new_low, new_high


def _rng_bit_generator(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    algorithm = str(op.attributes["rng_algorithm"]).rstrip(">").split()[-1].upper()
    state_shape, shape = tensor_shape(op.operands[0]), tensor_shape(op.results[1])
    dtype = tensor_dtype(op.results[1])
    if None in shape:
        b.refuse("random bits of a symbolic shape")
    if dtype.kind not in "iu":
        b.refuse(f"random bits as {dtype} (integers only here)")
    if algorithm not in ("DEFAULT", "PHILOX", "THREE_FRY"):
        b.refuse(f"the random algorithm {algorithm}")
    if state_shape not in ((2,),) and not (algorithm != "THREE_FRY" and state_shape == (3,)):
        b.refuse(f"a {algorithm} state of shape {list(state_shape)}")
    static = [int(d) for d in shape if d is not None]
    bits = 64 if dtype.itemsize == 8 else 32
    key = element(b, args[0], 0, 0)
    if algorithm == "THREE_FRY":
        result, counter = _three_fry(b, key, element(b, args[0], 1, 0), static, bits)
        state = [key, counter]
    else:
        low = element(b, args[0], 1, 0)
        high = element(b, args[0], 0 if state_shape == (2,) else 2, 0)  # u64[2]: XLA reverses it
        result, new_low, new_high = _philox(b, key, low, high, static, bits)
        state = [key, new_low] if state_shape == (2,) else [key, new_low, new_high]
    new_state = stacked(b, state, 0)
    if dtype.itemsize < 4:
        result = b.cast(result, unsigned_of(dtype))
    if dtype.kind == "i":
        result = b.cast(result, dtype)
    return [new_state, result]


TABLE: dict[str, Translation] = {"stablehlo.rng_bit_generator": _rng_bit_generator}
