"""The module of an exported function, deserialized once for all the lowerings that call it.

Each ``jax.jit`` lowering has its own MLIR context, and merging a module into
the caller's consumes it, so every lowering that calls an exported function
needs a fresh ``ir.Module`` of it in that context. Deserializing the portable
artifact (VHLO, upgraded to this jaxlib's StableHLO) is most of what the first
such lowering costs, and ``jax.export`` pays it on every lowering; parsing
the same module written as plain MLIR bytecode by this jaxlib takes a fifth
of the time. :class:`CalleeModule` deserializes the artifact once: the first
lowering reads the plain bytecode from the module cache
(``adapters.module_cache``) when an earlier process stored it; otherwise it
deserializes and writes the module once as plain bytecode (a tenth of the
deserialization's time), which it hands to the cache's writer thread when
the cache is on. Every later lowering parses that bytecode, whatever its call
site or argument shapes.

(A detached copy of the module, ``Operation.clone``, costs half as much as
writing the bytecode, but it keeps the first caller's whole MLIR context
alive with the copy: about 2 MB more per artifact at 2,000 operations, 8 MB
at 20,000, for as long as the artifact is loaded.)
"""

from __future__ import annotations

import io
import threading
import warnings
from collections.abc import Callable
from typing import Any

from jax.extend.mlir import ir

from ..domain.cache_entry import CacheWarning
from .mlir_module import StableHloSerializer
from .module_cache import PlainModuleCache

_serializer = StableHloSerializer()


class CalleeModule:
    """Makes the module of one exported function in the context of each lowering.

    Args:
        portable: the StableHLO portable artifact (called once, when first needed).
        digest: the SHA-256 of those bytes (called only with the module cache on).
        cache: where to keep the plain bytecode across processes (None: nowhere).
    """

    def __init__(self, portable: Callable[[], bytes], digest: Callable[[], bytes],
                 cache: PlainModuleCache | None) -> None:
        self._portable = portable
        self._digest = digest
        self._cache = cache
        self._lock = threading.Lock()
        self._plain: bytes | None = None

    def module_in(self, context: Any) -> Any:
        """A new ``ir.Module`` of the function in ``context``, for the caller to consume."""
        with self._lock:
            if self._plain is not None:
                return ir.Module.parse(self._plain, context=context)
            cache = self._cache if self._cache is not None and self._cache.enabled() else None
            if cache is not None:
                module = self._from_cache(cache, context)
                if module is not None:
                    return module
            module = _serializer.deserialize(self._portable(), context)
            self._plain = _bytecode(module.operation)
            if cache is not None:
                cache.put(self._digest(), self._plain)
            return module

    def _from_cache(self, cache: PlainModuleCache, context: Any) -> Any:
        stored = cache.get(self._digest())
        if stored is None:
            return None
        try:
            module = ir.Module.parse(stored, context=context)
        except Exception as exc:  # intact bytes this jaxlib cannot parse: rebuild the entry
            warnings.warn(CacheWarning(f"jaxport: ignoring a cached module ({exc}); "
                                       "deserializing the artifact again"), stacklevel=3)
            return None
        self._plain = stored
        return module


def _bytecode(operation: Any) -> bytes:
    """``operation`` written as MLIR bytecode of this jaxlib (not a portable artifact)."""
    out = io.BytesIO()
    operation.write_bytecode(file=out)
    return out.getvalue()
