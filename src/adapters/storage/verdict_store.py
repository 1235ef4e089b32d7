"""Verification verdicts remembered on disk: one small file per key, a bounded number of them.

The one thing jaxport keeps on disk between processes (compiled code is
JAX's persistent compilation cache's business). The directory is chosen by
``JAXPORT_CACHE_DIR``, read on each use:

- unset: ``$XDG_CACHE_HOME/jaxport/verdicts``, or ``~/.cache/jaxport/verdicts``;
- set to an empty string: nothing is remembered;
- set to a path: that directory.

It is created private to the user (mode 0700). Each verdict is a file
``<key>.json`` of at most :data:`MAX_VERDICT_BYTES`, written atomically, so
concurrent writers are harmless; reading one marks it used (its modification
time is set to now). After each write the least recently used files beyond
:data:`MAX_VERDICTS` are removed. A file that cannot be read or parsed is
treated as absent, and a directory that cannot be created turns remembering
off rather than failing the caller.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from pathlib import Path

from jaxport.domain.artifact.verification import Verdict
from .atomic_files import write_atomically

#: The environment variable that names the directory of verdicts.
ENV_VAR = "JAXPORT_CACHE_DIR"
#: How many verdicts are kept; the least recently used beyond it are removed.
MAX_VERDICTS = 1024
#: The largest verdict file written or read; a longer verdict is not remembered.
MAX_VERDICT_BYTES = 64 << 10

_KEY = re.compile(r"[0-9A-Za-z_-]{1,128}")
_SUFFIX = ".json"
#: A temporary file older than this is a crashed writer's, and is removed.
_STALE_TEMPORARY_S = 3600.0


def verdict_dir() -> Path | None:
    """The directory of verdicts as configured now, not created; None when remembering is off."""
    configured = os.environ.get(ENV_VAR)
    if configured == "":
        return None
    if configured is not None:
        return Path(configured).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "jaxport" / "verdicts"


class FileVerdictStore:
    """Verdicts in :func:`verdict_dir`, at most ``max_verdicts`` of them.

    Args:
        max_verdicts: the bound on the number of files kept.
    """

    def __init__(self, max_verdicts: int = MAX_VERDICTS) -> None:
        self._max_verdicts = max_verdicts

    def get(self, key: str) -> Verdict | None:
        """The verdict remembered under ``key``, if any (marked as just used)."""
        path = self._path(key, create=False)
        if path is None:
            return None
        try:
            with open(path, "rb") as file:
                data = file.read(MAX_VERDICT_BYTES + 1)
            os.utime(path)
        except OSError:
            return None
        return None if len(data) > MAX_VERDICT_BYTES else Verdict.from_json(data)

    def put(self, key: str, verdict: Verdict) -> None:
        """Remembers ``verdict`` under ``key``, then removes the least recently used
        files beyond the bound (best effort: a full or read-only disk is ignored)."""
        data = verdict.to_json()
        path = self._path(key, create=True)
        if path is None or len(data) > MAX_VERDICT_BYTES:
            return
        try:
            write_atomically(path, data)
        except OSError:
            return
        self._evict(path.parent)

    def _path(self, key: str, *, create: bool) -> Path | None:
        directory = verdict_dir()
        if directory is None or not _KEY.fullmatch(key):
            return None
        if create:
            try:
                directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            except OSError:
                return None
        return directory / (key + _SUFFIX)

    def _evict(self, directory: Path) -> None:
        found: list[tuple[float, str]] = []
        stale: list[str] = []
        now = time.time()
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    try:
                        mtime = entry.stat().st_mtime
                    except OSError:
                        continue  # removed by another process meanwhile
                    if entry.name.startswith("."):
                        if entry.name.endswith(".tmp") and now - mtime > _STALE_TEMPORARY_S:
                            stale.append(entry.name)
                    elif entry.name.endswith(_SUFFIX):
                        found.append((mtime, entry.name))
        except OSError:
            return
        found.sort()
        for name in stale + [name for _, name in found[:max(0, len(found) - self._max_verdicts)]]:
            with contextlib.suppress(OSError):  # already removed by another process
                os.unlink(directory / name)
