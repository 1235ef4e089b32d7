"""The executable cache: compiled calls of loaded artifacts, reused across processes.

An eager call of an artifact loaded with :func:`jaxport.load` or
:func:`jaxport.deserialize` (and :meth:`Exported.warm`) lowers the call as
usual, then looks for the executable under the call's
:class:`~jaxport.domain.executable_key.ExecutableKey` in
``cache_subdir("executables")``. A hit loads the executable from its bytes
(no XLA compilation); a miss compiles and stores it. A damaged, truncated,
foreign or unloadable entry is ignored with a :class:`CacheWarning` and
recompiled. JAX's global configuration is never touched: this is not JAX's
persistent compilation cache. In-process exports do not use the cache.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import jax

from ..adapters.cache_store import DirectoryCacheStore
from ..adapters.xla_executables import XlaExecutables
from ..domain.cache_entry import CacheEntryError, CacheWarning, decode_entry, encode_entry
from ..domain.executable_key import EXECUTABLE_MAGIC, ExecutableKey
from . import placement

logger = logging.getLogger("jaxport.cache")

#: Where a compiled call came from: the cache, a compilation now stored, or
#: a compilation that was not stored (caching off, or not cacheable).
Outcome = Literal["hit", "compiled", "uncached"]

#: The subdirectory of the jaxport cache that holds executables.
EXECUTABLES_SUBDIR = "executables"


@dataclass
class CacheStats:
    """What the cache did in this process (for tests and diagnostics)."""

    hits: int = 0
    misses: int = 0
    rejected: int = 0
    uncached: int = 0


@dataclass(frozen=True)
class ExecutableCache:
    """Finds, or compiles and stores, the executable of a lowered eager call."""

    store: DirectoryCacheStore
    executables: XlaExecutables
    stats: CacheStats = field(default_factory=CacheStats)

    def compiled(self, jitted: Callable[..., Any], artifact_digest: str,
                 args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[jax.stages.Compiled, Outcome]:
        """The compiled ``jitted`` for these arguments, from the cache when it has it."""
        lowered = self.executables.lower(jitted, args, kwargs)
        max_bytes = self.store.max_bytes  # a bad JAXPORT_CACHE_MAX_BYTES fails before compiling
        key = None
        if self.store.directory() is not None and max_bytes > 0:
            try:
                if self.executables.cacheable(lowered):
                    key = self.key(lowered, artifact_digest)
            except Exception:  # a lowering this version cannot describe: compile, uncached
                logger.debug("no executable cache key for %s", lowered, exc_info=True)
        if key is None:
            self.stats.uncached += 1
            return lowered.compile(), "uncached"
        name, encoded = key.digest(), key.encode()
        data = self.store.read(name)
        if data is not None:
            try:
                compiled = self.executables.load(lowered, decode_entry(data, EXECUTABLE_MAGIC, encoded))
            except Exception as exc:  # CacheEntryError, or the backend refusing the bytes
                self.stats.rejected += 1
                reason = str(exc) if isinstance(exc, CacheEntryError) else f"{type(exc).__name__}: {exc}"
                warnings.warn(CacheWarning(
                    f"jaxport: ignoring the cached executable {self.store.path(name)} ({reason}); "
                    "compiling again"), stacklevel=4)
                self.store.discard(name)
            else:
                self.stats.hits += 1
                logger.debug("executable cache hit %s", name)
                return compiled, "hit"
        self.stats.misses += 1
        logger.debug("executable cache miss %s", name)
        compiled, payload = self.executables.compile(lowered)
        if payload is None:
            return compiled, "uncached"
        self.store.write(name, encode_entry(EXECUTABLE_MAGIC, encoded, payload))
        return compiled, "compiled"

    def key(self, lowered: jax.stages.Lowered, artifact_digest: str) -> ExecutableKey:
        """The key of the executable of ``lowered``."""
        in_avals, in_shardings = self.executables.call_signature(lowered)
        return ExecutableKey(
            artifact_digest=artifact_digest,
            program_digest=self.executables.program_digest(lowered),
            in_avals=in_avals, in_shardings=in_shardings,
            **self.executables.environment(lowered))


@functools.lru_cache(maxsize=1)
def default_cache() -> ExecutableCache:
    """The process's executable cache (its directory is resolved on each use)."""
    return ExecutableCache(DirectoryCacheStore(EXECUTABLES_SUBDIR), XlaExecutables())


def artifact_digest(module_digest: bytes, signature: str) -> str:
    """SHA-256 (hex) of an artifact's module digest (SHA-256 of its bytes) and its signature's text."""
    return hashlib.sha256(module_digest + b"\0" + signature.encode()).hexdigest()


class CachingCaller:
    """An eager caller that takes its executables from the cache, one per signature.

    Inside a JAX transformation (any argument is a tracer) it defers to the
    jitted function, which inlines. Outside, each new signature (pytree,
    abstract values, shardings, committedness) gets a ``Compiled`` from the
    cache. The last one used is tried first, on JAX's C++ dispatch path,
    which checks the arguments itself and refuses others with a
    ``TypeError`` or ``ValueError``; only then is the signature looked up.
    For a module lowered for several devices (``multi_device``), arguments
    none of which is committed to devices skip that shortcut, which would
    place them: as with ``jax.export``, such a call runs on one device and fails.
    """

    def __init__(self, jitted: Callable[..., Any], digest: Callable[[], str],
                 cache: ExecutableCache | None = None, *, multi_device: bool = False) -> None:
        self._jitted = jitted
        self._digest = digest
        self._cache = cache
        self._multi_device = multi_device
        self._compiled: dict[Any, jax.stages.Compiled] = {}
        self._last: jax.stages.Compiled | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        last = self._last
        if last is not None and self._multi_device and not any(
                _placed_or_traced(x) for x in jax.tree_util.tree_leaves((args, kwargs))):
            last = None
        if last is not None:
            try:
                return last(*args, **kwargs)
            except (TypeError, ValueError):
                pass  # another signature, or tracers: looked up below
        return self._lookup(args, kwargs)

    def _lookup(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        leaves, tree = jax.tree_util.tree_flatten((args, kwargs))
        if any(isinstance(x, jax.core.Tracer) for x in leaves):
            return self._jitted(*args, **kwargs)
        signature = (tree, *(_leaf_signature(x) for x in leaves))
        compiled = self._compiled.get(signature)
        if compiled is None:
            compiled = self.compile(args, kwargs)
            self._compiled[signature] = compiled
        self._last = compiled
        return compiled(*args, **kwargs)

    def compile(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> jax.stages.Compiled:
        """The ``Compiled`` for these arguments (or their ``ShapeDtypeStruct`` specs)."""
        cache = self._cache or default_cache()
        return cache.compiled(self._jitted, self._digest(), args, kwargs)[0]


def _placed_or_traced(x: Any) -> bool:
    """Whether ``x`` is a tracer or an array committed to devices."""
    if isinstance(x, jax.core.Tracer):
        return True
    return isinstance(x, jax.Array) and bool(x.committed)


def _leaf_signature(x: Any) -> Any:
    return (jax.typeof(x), getattr(x, "sharding", None), getattr(x, "committed", None))


def warm(exp: Any, args_specs: tuple[Any, ...], kwargs_specs: dict[str, Any]) -> Outcome:
    """``Exported.warm``: compiles ``exp``'s eager call for the specs and fills the cache."""
    from ..domain.errors import CallError
    from .calling import make_caller

    if not args_specs and not kwargs_specs:
        if any(not isinstance(d, int) for a in exp.in_avals for d in a.shape):
            raise CallError(
                f"Cannot warm '{exp.fun_name}' without argument specs: its exported shapes "
                f"{[str(a.str_short()) for a in exp.in_avals]} are symbolic. Pass "
                "jax.ShapeDtypeStruct specs with the concrete shapes to compile for.")
        placements = (placement.default_placements(exp.in_shardings, exp.fun_name)
                      if exp.nr_devices > 1 and any(s is not None for s in exp.in_shardings)
                      else (None,) * len(exp.in_avals))
        leaves = [jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=s)
                  for a, s in zip(exp.in_avals, placements)]
        args_specs, kwargs_specs = jax.tree_util.tree_unflatten(exp.in_tree, leaves)
    caller = exp._caller
    jitted = caller._jitted if isinstance(caller, CachingCaller) else make_caller(exp)
    return default_cache().compiled(jitted, exp._artifact_digest, tuple(args_specs), dict(kwargs_specs))[1]
