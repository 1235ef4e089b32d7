"""Seeded byte mutations: the same (campaign seed, index) gives the same mutation.

Ten kinds, drawn alike: bit flips, byte changes (anywhere, or only in the
tables, outside the main module's bytes, where the codec reads), truncation,
insertion, deletion, a 32-bit value that decoders treat specially (a size, an
offset, a sign bit), two kinds of splices with another seed, and random bytes.
"""

from __future__ import annotations

import random

_INTERESTING = (0, 1, 0x7F, 0x80, 0xFF, 0x7FFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF, 0x80000000)
KINDS = 10


def mutate(blob: bytes, rng: random.Random, other: bytes, module_at: tuple[int, int] = (0, 0)) -> bytes:
    """A mutation of ``blob`` that differs from it.

    Args:
        blob: the seed's bytes.
        rng: the source of every choice.
        other: another seed's bytes, spliced in sometimes.
        module_at: where the main module's bytes lie in ``blob`` (start, end).
    """
    for _ in range(100):
        out = _once(blob, rng, other, module_at)
        if out != blob:
            return out
    return blob[:-1]


def _once(blob: bytes, rng: random.Random, other: bytes, module_at: tuple[int, int]) -> bytes:
    data = bytearray(blob)
    kind = rng.randrange(KINDS)
    if kind == 0:  # flip bits
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    elif kind == 1:  # set bytes
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
    elif kind == 2:  # set bytes of the tables
        start, end = module_at if module_at[1] - module_at[0] < len(data) else (0, 0)
        outside = len(data) - (end - start)
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(outside)
            data[at if at < start else at + end - start] = rng.randrange(256)
    elif kind == 3:  # truncate
        del data[rng.randrange(len(data)):]
    elif kind == 4:  # insert
        at = rng.randrange(len(data) + 1)
        data[at:at] = rng.randbytes(rng.randint(1, 16))
    elif kind == 5:  # delete a range
        at = rng.randrange(len(data))
        del data[at:at + rng.randint(1, 16)]
    elif kind == 6:  # an interesting 32-bit value at a random aligned place
        at = rng.randrange(max(1, len(data) // 4)) * 4
        value = rng.choice(_INTERESTING + (len(data), rng.getrandbits(32)))
        data[at:at + 4] = value.to_bytes(4, "little")
    elif kind == 7:  # splice another seed's tail
        cut = rng.randrange(len(data))
        data[cut:] = other[rng.randrange(len(other)):]
    elif kind == 8:  # replace a range with a piece of another seed
        at, start = rng.randrange(len(data)), rng.randrange(len(other))
        data[at:at + rng.randrange(64)] = other[start:start + rng.randrange(65)]
    else:  # random bytes, nothing of the seed
        return rng.randbytes(rng.randrange(513))
    return bytes(data)
