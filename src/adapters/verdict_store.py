"""Verification verdicts remembered on disk, one small file per key.

They live in ``cache_subdir("verified")`` (see :mod:`.cache_dir`); with
caching off nothing is remembered. A file that cannot be read or parsed is
treated as absent; writes are atomic, so concurrent writers are harmless.
"""

from __future__ import annotations

import re

from ..domain.verification import Verdict
from .cache_dir import cache_subdir
from .files import AtomicFileStore

_KEY = re.compile(r"^[A-Za-z0-9_.-]{1,200}$")


class FileVerdictStore:
    """Verdicts under the cache directory's ``verified`` folder."""

    def get(self, key: str) -> Verdict | None:
        """The verdict remembered under ``key``, if any."""
        folder = cache_subdir("verified")
        if folder is None or not _KEY.match(key):
            return None
        try:
            data = (folder / key).read_bytes()
        except OSError:
            return None
        return Verdict.from_json(data[:1 << 20])

    def put(self, key: str, verdict: Verdict) -> None:
        """Remembers ``verdict`` under ``key`` (best effort: a full disk is ignored)."""
        folder = cache_subdir("verified")
        if folder is None or not _KEY.match(key):
            return
        try:
            AtomicFileStore().write(folder / key, verdict.to_json())
        except OSError:
            pass
