"""How big a cache directory may grow, and which entries to forget first.

The policy is least recently used: each entry has a size and the time it was
last written or read; when the total exceeds the bound, the oldest entries go
first until the rest fits. The bound comes from ``JAXPORT_CACHE_MAX_BYTES``
(an integer number of bytes, or with a binary suffix such as ``512M`` or
``2G``), :data:`DEFAULT_MAX_BYTES` when unset.

This module decides; it reads no files and no environment.

>>> entries_to_evict([StoredEntry("a", 60, 1.0), StoredEntry("b", 60, 2.0)], max_bytes=100)
('a',)
>>> parse_size("512M")
536870912
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from .errors import JaxportError

#: The environment variable that bounds each cache subdirectory, in bytes.
MAX_BYTES_ENV = "JAXPORT_CACHE_MAX_BYTES"
#: The bound when the variable is unset: 2 GiB per cache subdirectory.
DEFAULT_MAX_BYTES = 2 * 1024 ** 3

_SIZE = re.compile(r"\s*(\d+)\s*([kmgt]?)(i?b)?\s*", re.IGNORECASE)
_UNITS = {"": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3, "t": 1024 ** 4}


class CacheConfigError(JaxportError, ValueError):
    """A cache setting (an environment variable) has a value that does not parse."""


@dataclass(frozen=True, slots=True)
class StoredEntry:
    """One entry of a cache directory: its name, size in bytes and last use (seconds)."""

    name: str
    size: int
    last_used: float


def entries_to_evict(entries: Iterable[StoredEntry], max_bytes: int,
                     keep: str | None = None) -> tuple[str, ...]:
    """The names to delete so that the remaining entries total at most ``max_bytes``.

    The least recently used go first (ties by name, for determinism); the
    entry named ``keep`` (the one just written) goes last.
    """
    ordered = sorted(entries, key=lambda e: (e.name == keep, e.last_used, e.name))
    total = sum(e.size for e in ordered)
    evicted: list[str] = []
    for entry in ordered:
        if total <= max_bytes:
            break
        evicted.append(entry.name)
        total -= entry.size
    return tuple(evicted)


def parse_size(text: str) -> int:
    """A size in bytes from ``"1048576"``, ``"512M"``, ``"2G"``, ``"1GiB"`` (binary units).

    Raises:
        CacheConfigError: the text is not such a size.
    """
    match = _SIZE.fullmatch(text)
    if match is None:
        raise CacheConfigError(
            f"{MAX_BYTES_ENV}={text!r} is not a size: use a number of bytes, "
            "optionally with a binary suffix K, M, G or T (e.g. 512M, 2G)")
    return int(match.group(1)) * _UNITS[match.group(2).lower()]


def max_bytes_from(value: str | None) -> int:
    """The size bound for a value of ``JAXPORT_CACHE_MAX_BYTES`` (None: the default)."""
    return DEFAULT_MAX_BYTES if value is None or not value.strip() else parse_size(value)
