"""A bounded directory of cache entries under the jaxport cache directory.

Each entry is one file, ``<name>.entry``, in ``cache_subdir(subdir)`` (see
:mod:`jaxport.adapters.cache_dir`; caching is off when that is None). Files
are written atomically (a private temporary file, mode 0600, then
``os.replace``), so processes that fill the directory at once each leave a
whole entry, and the last one wins. Reading an entry marks it used (its modification time is set
to now, since access times are often not kept by the file system); after
each write the least recently used entries are removed until the directory
holds at most ``max_bytes`` (:mod:`jaxport.domain.cache_eviction`).

What an entry means, and whether its bytes are intact, is the caller's
business (:mod:`jaxport.domain.cache_entry`).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from ..domain.cache_eviction import MAX_BYTES_ENV, StoredEntry, entries_to_evict, max_bytes_from
from .cache_dir import cache_subdir
from .files import AtomicFileStore

_SUFFIX = ".entry"
_NAME = re.compile(r"[0-9A-Za-z_-]{1,128}")
#: Temporary files older than this are a crashed writer's and are removed.
_STALE_TEMPORARY_S = 3600.0


class DirectoryCacheStore:
    """Named byte entries in one cache subdirectory, bounded in total size.

    Args:
        subdir: the subdirectory of the jaxport cache (``"executables"``).
        max_bytes: the bound; None reads ``JAXPORT_CACHE_MAX_BYTES`` (default 2 GiB).
        directory: the directory itself, resolved already (see :meth:`pinned`);
            None resolves ``cache_subdir(subdir)`` on each use.

    Raises:
        CacheConfigError: ``JAXPORT_CACHE_MAX_BYTES`` does not parse.
    """

    def __init__(self, subdir: str, max_bytes: int | None = None, *,
                 directory: Path | None = None) -> None:
        self.subdir = subdir
        self._max_bytes = max_bytes
        self._directory = directory

    @property
    def max_bytes(self) -> int:
        """The size bound in bytes (read from the environment on each use unless given)."""
        return max_bytes_from(os.environ.get(MAX_BYTES_ENV)) if self._max_bytes is None else self._max_bytes

    def directory(self) -> Path | None:
        """The directory of the entries, created 0700; None when caching is off."""
        return self._directory if self._directory is not None else cache_subdir(self.subdir)

    def pinned(self) -> DirectoryCacheStore | None:
        """This store with its directory and bound resolved now (None when caching is off).

        For a write done later (on another thread): it lands where the cache
        was when the write was decided, whatever the environment says by then.

        Raises:
            CacheConfigError: ``JAXPORT_CACHE_MAX_BYTES`` does not parse.
        """
        directory = self.directory()
        if directory is None:
            return None
        return DirectoryCacheStore(self.subdir, self.max_bytes, directory=directory)

    def path(self, name: str) -> Path | None:
        """Where the entry ``name`` lives (None when caching is off)."""
        if not _NAME.fullmatch(name):
            raise ValueError(f"not a cache entry name: {name!r}")
        directory = self.directory()
        return None if directory is None else directory / (name + _SUFFIX)

    def read(self, name: str) -> bytes | None:
        """The bytes of entry ``name``, marked as just used; None if absent or unreadable."""
        path = self.path(name)
        if path is None:
            return None
        try:
            data = path.read_bytes()
        except OSError:
            return None
        try:
            os.utime(path)
        except OSError:
            pass
        return data

    def write(self, name: str, data: bytes) -> None:
        """Stores ``data`` as entry ``name`` atomically, then evicts down to the bound.

        An entry larger than the bound is not stored. A failure to write
        (full disk, read-only directory) leaves the cache as it was.
        """
        path = self.path(name)
        if path is None or len(data) > self.max_bytes:
            return
        try:
            AtomicFileStore().write(path, data, mode=0o600)
        except OSError:
            return
        self.evict(keep=name)

    def discard(self, name: str) -> None:
        """Removes entry ``name`` if it is there."""
        path = self.path(name)
        if path is not None:
            _unlink(path)

    def entries(self) -> list[StoredEntry]:
        """The entries present now, with their sizes and last use."""
        directory = self.directory()
        if directory is None:
            return []
        found: list[StoredEntry] = []
        now = time.time()
        for child in directory.iterdir():
            try:
                stat = child.stat()
            except OSError:
                continue  # removed by another process meanwhile
            if child.name.endswith(_SUFFIX) and not child.name.startswith("."):
                found.append(StoredEntry(child.name[:-len(_SUFFIX)], stat.st_size, stat.st_mtime))
            elif child.name.startswith(".") and now - stat.st_mtime > _STALE_TEMPORARY_S:
                _unlink(child)
        return found

    def evict(self, keep: str | None = None) -> tuple[str, ...]:
        """Removes the least recently used entries beyond the bound; returns their names."""
        doomed = entries_to_evict(self.entries(), self.max_bytes, keep=keep)
        for name in doomed:
            self.discard(name)
        return doomed


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass  # already gone (another process evicted it) or not ours to remove
