"""Parsed modules of loaded artifacts, kept on disk as plain MLIR bytecode.

Deserializing a StableHLO portable artifact (VHLO, upgraded to this jaxlib's
StableHLO) takes about five times as long as parsing the same module written
as plain MLIR bytecode by this jaxlib. The first lowering of a loaded
artifact therefore stores that bytecode under ``cache_subdir("modules")``,
keyed by the SHA-256 of the artifact's module and the jax/jaxlib versions,
and later processes parse it instead. Entries use the checksummed framing of
:mod:`jaxport.domain.cache_entry`; a damaged one is ignored with a warning.

Storing an entry (checksum, file written and fsync'ed, eviction) is done on
one background thread, so the lowering that made the bytecode does not wait
for the disk; the directory is resolved when the write is decided. Pending
writes finish before the interpreter exits (the thread is joined then), and
:meth:`PlainModuleCache.flush` waits for them.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import warnings
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from ..domain.cache_entry import CacheEntryError, CacheWarning, decode_entry, encode_entry
from .cache_store import DirectoryCacheStore

#: The magic of plain-module entries.
MODULE_MAGIC = b"JXPMLIR1"
#: The subdirectory of the jaxport cache that holds them.
MODULES_SUBDIR = "modules"


class PlainModuleCache:
    """Plain MLIR bytecode of artifact modules, by the SHA-256 of the artifact's module."""

    def __init__(self, store: DirectoryCacheStore | None = None) -> None:
        self.store = store or DirectoryCacheStore(MODULES_SUBDIR)

    def enabled(self) -> bool:
        """Whether entries are read and written now (``JAXPORT_CACHE_DIR`` is not empty)."""
        return self.store.directory() is not None

    def get(self, module_digest: bytes) -> bytes | None:
        """The stored plain bytecode of the module whose SHA-256 is ``module_digest``, or None."""
        name, key = _key(module_digest)
        data = self.store.read(name)
        if data is None:
            return None
        try:
            return decode_entry(data, MODULE_MAGIC, key)
        except CacheEntryError as exc:
            warnings.warn(CacheWarning(
                f"jaxport: ignoring the cached module {self.store.path(name)} ({exc}); "
                "deserializing the artifact again"), stacklevel=2)
            self.store.discard(name)
            return None

    def put(self, module_digest: bytes, plain: bytes) -> None:
        """Stores ``plain`` as the bytecode of that module, on the writer thread."""
        store = self.store.pinned()
        if store is None:
            return
        _WRITER.submit(_write, store, module_digest, plain)

    @staticmethod
    def flush() -> None:
        """Waits until every entry given to :meth:`put` is stored (or failed to be)."""
        _WRITER.wait()


def _write(store: DirectoryCacheStore, module_digest: bytes, plain: bytes) -> None:
    name, key = _key(module_digest)
    store.write(name, encode_entry(MODULE_MAGIC, key, plain))


def _key(module_digest: bytes) -> tuple[str, bytes]:
    import jax
    from jaxlib import version as jaxlib_version

    key = json.dumps({"module": module_digest.hex(), "jax": jax.__version__,
                      "jaxlib": jaxlib_version.__version__}, sort_keys=True).encode()
    return hashlib.sha256(key).hexdigest(), key


class _BackgroundWriter:
    """One worker thread for cache writes, made on first use (and again in a forked child)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._pid = 0
        self._pending: list[Future[None]] = []

    def submit(self, fn: Callable[..., None], *args: Any) -> None:
        with self._lock:
            if self._pool is None or self._pid != os.getpid():
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jaxport-module-cache")
                self._pid = os.getpid()
                self._pending = []
            self._pending = [f for f in self._pending if not f.done()]
            try:
                self._pending.append(self._pool.submit(fn, *args))
                return
            except RuntimeError:  # the interpreter is shutting down: no new threads
                pass
        fn(*args)

    def wait(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, []
        for future in pending:
            future.result()


_WRITER = _BackgroundWriter()
