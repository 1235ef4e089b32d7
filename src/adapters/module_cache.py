"""Parsed modules of loaded artifacts, kept on disk as plain MLIR bytecode.

Deserializing a StableHLO portable artifact (VHLO, upgraded to this jaxlib's
StableHLO) takes about five times as long as parsing the same module written
as plain MLIR bytecode by this jaxlib. The first lowering of a loaded
artifact therefore stores that bytecode under ``cache_subdir("modules")``,
keyed by a digest of the artifact's module and the jax/jaxlib versions, and
later processes parse it instead. Entries use the checksummed framing of
:mod:`jaxport.domain.cache_entry`; a damaged one is ignored with a warning.
"""

from __future__ import annotations

import hashlib
import json
import warnings

from ..domain.cache_entry import CacheEntryError, CacheWarning, decode_entry, encode_entry
from .cache_store import DirectoryCacheStore

#: The magic of plain-module entries.
MODULE_MAGIC = b"JXPMLIR1"
#: The subdirectory of the jaxport cache that holds them.
MODULES_SUBDIR = "modules"


class PlainModuleCache:
    """Plain MLIR bytecode of artifact modules, by the artifact module's digest."""

    def __init__(self, store: DirectoryCacheStore | None = None) -> None:
        self.store = store or DirectoryCacheStore(MODULES_SUBDIR)

    def get(self, portable: bytes) -> bytes | None:
        """The stored plain bytecode of the module ``portable``, or None."""
        name, key = self._key(portable)
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

    def put(self, portable: bytes, plain: bytes) -> None:
        """Stores ``plain`` as the bytecode of the module ``portable``."""
        name, key = self._key(portable)
        self.store.write(name, encode_entry(MODULE_MAGIC, key, plain))

    @staticmethod
    def _key(portable: bytes) -> tuple[str, bytes]:
        import jax
        from jaxlib import version as jaxlib_version

        key = json.dumps({"module": hashlib.sha256(portable).hexdigest(), "jax": jax.__version__,
                          "jaxlib": jaxlib_version.__version__}, sort_keys=True).encode()
        return hashlib.sha256(key).hexdigest(), key
