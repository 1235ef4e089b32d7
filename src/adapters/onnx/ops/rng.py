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
from .common import Translation, element, iota_of, unsigned_of

U32, U64 = np.dtype(np.uint32), np.dtype(np.uint64)
_MASK = 0xFFFFFFFF
_ROTATIONS = (13, 15, 26, 6, 17, 29, 16, 24)
_PHILOX_W = (0x9E3779B9, 0xBB67AE85)
_PHILOX_M = (0xD2511F53, 0xCD9E8D57)


class _Words:
    """The integer operations on uint32 and uint64 tensors that the generators are written in."""

    def __init__(self, b: GraphBuilder) -> None:
        self.b = b

    def u32(self, value: int) -> str:
        return self.b.scalar(value, U32)

    def u64(self, value: int) -> str:
        return self.b.scalar(value, U64)

    def op(self, op_type: str, *inputs: str) -> str:
        return self.b.one(op_type, list(inputs))

    def shift(self, x: str, by: str, direction: str) -> str:
        return self.b.one("BitShift", [x, by], direction=direction)

    def low(self, x: str) -> str:
        """The low 32 bits of a uint64 ``x``."""
        return self.b.cast(self.op("BitwiseAnd", x, self.u64(_MASK)), U32)

    def high(self, x: str) -> str:
        """The high 32 bits of a uint64 ``x``."""
        return self.b.cast(self.shift(x, self.u64(32), "RIGHT"), U32)

    def wide(self, low: str, high: str) -> str:
        """The uint64 of two uint32 halves."""
        return self.op("BitwiseOr", self.b.cast(low, U64), self.shift(self.b.cast(high, U64), self.u64(32), "LEFT"))

    def rotate(self, x: str, distance: int) -> str:
        return self.op("BitwiseOr", self.shift(x, self.u32(distance), "LEFT"),
                       self.shift(x, self.u32(32 - distance), "RIGHT"))

    def element(self, vector: str, index: int) -> str:
        """Element ``index`` of a 1-D tensor, 0-D."""
        return element(self.b, vector, index, 0)

    def counters(self, start: str, count: int) -> str:
        """``start + [0, 1, ..., count - 1]`` (uint64, wrapping)."""
        b = self.b
        iota = b.cast(iota_of(b, b.scalar(count, I64)), U64)
        return self.op("Add", iota, start)


def _threefry(w: _Words, x0: str, x1: str, key: str) -> tuple[str, str]:
    """Threefry-2x32 (20 rounds, as XLA's) of the words ``x0``, ``x1`` keyed by a uint64 ``key``."""
    ks = [w.low(key), w.high(key)]
    ks.append(w.op("BitwiseXor", w.op("BitwiseXor", w.u32(0x1BD11BDA), ks[0]), ks[1]))
    x0, x1 = w.op("Add", x0, ks[0]), w.op("Add", x1, ks[1])
    for group in range(5):
        for rotation in _ROTATIONS[4 * (group % 2):4 * (group % 2) + 4]:
            x0 = w.op("Add", x0, x1)
            x1 = w.op("BitwiseXor", x0, w.rotate(x1, rotation))
        x0 = w.op("Add", x0, ks[(group + 1) % 3])
        x1 = w.op("Add", w.op("Add", x1, ks[(group + 2) % 3]), w.u32(group + 1))
    return x0, x1


def _split(shape: Sequence[int]) -> int:
    """The dimension XLA splits a shape in halves along: the first even one, else the first largest."""
    even = [i for i, d in enumerate(shape) if d % 2 == 0]
    return even[0] if even else max(range(len(shape)), key=lambda i: (shape[i], -i))


def _three_fry(w: _Words, key: str, counter: str, shape: Sequence[int], bits: int) -> tuple[str, str]:
    """The output (``bits`` wide, of ``shape``) and the new counter."""
    b = w.b
    if bits == 64:
        count = int(np.prod(shape, dtype=np.int64))
        inputs = w.counters(counter, count)
        x0, x1 = _threefry(w, w.low(inputs), w.high(inputs), key)
        result = b.one("Reshape", [w.wide(x0, x1), b.int64s(shape)], allowzero=1)
        return result, w.op("Add", counter, w.u64(count))
    if not shape:
        inputs = w.counters(counter, 1)
        x0, _ = _threefry(w, w.low(inputs), w.high(inputs), key)
        return b.one("Reshape", [x0, b.int64s([])]), w.op("Add", counter, w.u64(1))
    axis = _split(shape)
    half = [*shape[:axis], (shape[axis] + 1) // 2, 1, *shape[axis + 1:]]
    count = int(np.prod(half, dtype=np.int64))
    inputs = w.counters(counter, count)
    x0, x1 = _threefry(w, w.low(inputs), w.high(inputs), key)
    halves = [b.one("Reshape", [x, b.int64s(half)], allowzero=1) for x in (x0, x1)]
    paired = b.one("Concat", halves, axis=axis + 1)
    whole = [*shape[:axis], 2 * half[axis], *shape[axis + 1:]]
    result = b.one("Reshape", [paired, b.int64s(whole)], allowzero=1)
    if whole[axis] != shape[axis]:
        result = b.one("Slice", [result, b.int64s([0]), b.int64s([shape[axis]]), b.int64s([axis])])
    return result, w.op("Add", counter, w.u64(count))


def _philox_rounds(w: _Words, x: list[str], key: str) -> list[str]:
    """Philox-4x32 (10 rounds) of the words ``x`` keyed by a uint64 ``key``."""
    k0, k1 = w.low(key), w.high(key)
    for _ in range(10):
        products = []
        for word, multiplier in ((x[0], _PHILOX_M[0]), (x[2], _PHILOX_M[1])):
            product = w.op("Mul", w.b.cast(word, U64), w.u64(multiplier))
            products.append((w.high(product), w.low(product)))
        (high0, low0), (high1, low1) = products
        x = [w.op("BitwiseXor", w.op("BitwiseXor", high1, x[1]), k0), low1,
             w.op("BitwiseXor", w.op("BitwiseXor", high0, x[3]), k1), low0]
        k0, k1 = w.op("Add", k0, w.u32(_PHILOX_W[0])), w.op("Add", k1, w.u32(_PHILOX_W[1]))
    return x


def _plus(w: _Words, low: str, high: str, added: str) -> tuple[str, str]:
    """The 128-bit ``(low, high) + added`` (uint64 words; ``added`` broadcast)."""
    total = w.op("Add", low, added)
    carry = w.b.cast(w.op("Less", total, low), U64)
    return total, w.op("Add", high, carry)


def _philox(w: _Words, key: str, low: str, high: str, shape: Sequence[int], bits: int) -> tuple[str, str, str]:
    """The output (``bits`` wide, of ``shape``) and the new 128-bit counter."""
    b = w.b
    count = int(np.prod(shape, dtype=np.int64))
    blocks = -(-count * (2 if bits == 64 else 1) // 4)
    low_i, high_i = _plus(w, low, high, w.counters(w.u64(0), blocks))
    words = _philox_rounds(w, [w.low(low_i), w.high(low_i), w.low(high_i), w.high(high_i)], key)
    if bits == 64:
        words = [w.wide(words[0], words[1]), w.wide(words[2], words[3])]
    last = b.int64s([-1])
    stacked = b.one("Concat", [b.one("Unsqueeze", [x, last]) for x in words], axis=-1)
    flat = b.one("Slice", [b.one("Reshape", [stacked, b.int64s([-1])]), b.int64s([0]), b.int64s([count])])
    result = b.one("Reshape", [flat, b.int64s(list(shape))], allowzero=1)
    new_low, new_high = _plus(w, low, high, w.u64(blocks))
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
    w = _Words(b)
    static = [int(d) for d in shape if d is not None]
    bits = 64 if dtype.itemsize == 8 else 32
    key = w.element(args[0], 0)
    if algorithm == "THREE_FRY":
        result, counter = _three_fry(w, key, w.element(args[0], 1), static, bits)
        state = [key, counter]
    else:
        low, high = (w.element(args[0], 1), w.element(args[0], 0)) if state_shape == (2,) else (
            w.element(args[0], 1), w.element(args[0], 2))
        result, new_low, new_high = _philox(w, key, low, high, static, bits)
        state = [key, new_low] if state_shape == (2,) else [key, new_low, new_high]
    first = b.int64s([0])
    new_state = b.one("Concat", [b.one("Unsqueeze", [s, first]) for s in state], axis=0)
    if dtype.itemsize < 4:
        result = b.cast(result, unsigned_of(dtype))
    if dtype.kind == "i":
        result = b.cast(result, dtype)
    return [new_state, result]


TABLE: dict[str, Translation] = {"stablehlo.rng_bit_generator": _rng_bit_generator}
