"""Verification verdicts remembered on disk, one small entry per key.

They are entries of a :class:`.cache_store.DirectoryCacheStore` in the
cache directory's ``verified`` folder (see :mod:`.cache_dir`): bounded by
``JAXPORT_CACHE_MAX_BYTES`` like the executables, the least recently used
evicted first, and each read marks the verdict used. With caching off
nothing is remembered. An entry that cannot be read or parsed is treated as
absent; writes are atomic, so concurrent writers are harmless.
"""

from __future__ import annotations

import re

from ..domain.verification import Verdict
from .cache_store import DirectoryCacheStore

_KEY = re.compile(r"[0-9A-Za-z_-]{1,128}")
_MAX_VERDICT_BYTES = 1 << 20


class FileVerdictStore:
    """Verdicts under the cache directory's ``verified`` folder.

    Args:
        max_bytes: the bound of the folder; None reads ``JAXPORT_CACHE_MAX_BYTES``
            (default 2 GiB), as the executable cache does.
    """

    def __init__(self, max_bytes: int | None = None) -> None:
        self._entries = DirectoryCacheStore("verified", max_bytes)

    def get(self, key: str) -> Verdict | None:
        """The verdict remembered under ``key``, if any (marked as just used)."""
        if not _KEY.fullmatch(key):
            return None
        data = self._entries.read(key)
        return None if data is None else Verdict.from_json(data[:_MAX_VERDICT_BYTES])

    def put(self, key: str, verdict: Verdict) -> None:
        """Remembers ``verdict`` under ``key``, then evicts down to the bound
        (best effort: a full disk is ignored)."""
        if _KEY.fullmatch(key):
            self._entries.write(key, verdict.to_json())
