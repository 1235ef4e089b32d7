"""Seeded byte mutations: the same (campaign seed, index) gives the same mutation."""

from __future__ import annotations

import random

_INTERESTING = (0, 1, 0x7F, 0x80, 0xFF, 0x7FFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF, 0x80000000)


def mutate(blob: bytes, rng: random.Random, other: bytes) -> bytes:
    """A mutation of ``blob`` that differs from it (``other`` is spliced in sometimes)."""
    for _ in range(100):
        out = _once(blob, rng, other)
        if out != blob:
            return out
    return blob[:-1]


def _once(blob: bytes, rng: random.Random, other: bytes) -> bytes:
    data = bytearray(blob)
    kind = rng.randrange(7)
    if kind == 0:  # flip bits
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    elif kind == 1:  # set bytes
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
    elif kind == 2:  # truncate
        del data[rng.randrange(len(data)):]
    elif kind == 3:  # insert
        at = rng.randrange(len(data) + 1)
        data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
    elif kind == 4:  # delete a range
        at = rng.randrange(len(data))
        del data[at:at + rng.randint(1, 16)]
    elif kind == 5:  # an interesting 32-bit value at a random aligned place
        at = rng.randrange(max(1, len(data) // 4)) * 4
        value = rng.choice(_INTERESTING + (len(data), rng.getrandbits(32)))
        data[at:at + 4] = value.to_bytes(4, "little")
    else:  # splice another artifact's tail
        cut = rng.randrange(len(data))
        data[cut:] = other[rng.randrange(len(other)):]
    return bytes(data)
