"""JAX's persistent compilation cache, as ``warm`` sees it: its settings and what it did.

Compiled calls of exported functions are cached by JAX itself, configured as
JAX users configure it (``JAX_COMPILATION_CACHE_DIR``, or
``jax.config.update("jax_compilation_cache_dir", ...)``); this module reads
those settings, and changes JAX's write thresholds only when a process that
does nothing but warm asks it to (:func:`keep_every_compilation`, for
``jaxport warm``). What JAX did during a compilation (a hit, a write, or no
use of the cache at all) is told by the events JAX records through the
public ``jax.monitoring`` API.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Any

import jax

#: The compilation looked the cache up (JAX uses its cache in this process).
LOOKED_UP = "/jax/compilation_cache/compile_requests_use_cache"
#: The cache had the executable.
HIT = "/jax/compilation_cache/cache_hits"
#: JAX wrote the executable it compiled to the cache.
WRITTEN = "/jax/compilation_cache/cache_misses"

_PREFIX = "/jax/compilation_cache/"

#: JAX's thresholds below which its cache writes no entry, and the values that keep every
#: compilation (JAX's defaults: compilations of at least a second, entries of any size the
#: cache's backend accepts).
KEEP_EVERY_COMPILATION: dict[str, float | int] = {
    "jax_persistent_cache_min_compile_time_secs": 0.0,
    "jax_persistent_cache_min_entry_size_bytes": -1,
}


@dataclass(frozen=True, slots=True)
class CacheSettings:
    """The settings of JAX's persistent compilation cache that decide what it holds.

    Attributes:
        directory: ``jax_compilation_cache_dir`` (None: no cache).
        enabled: ``jax_enable_compilation_cache``.
        min_compile_time_secs: ``jax_persistent_cache_min_compile_time_secs``;
            shorter compilations are not written.
        min_entry_size_bytes: ``jax_persistent_cache_min_entry_size_bytes``;
            smaller entries are not written (-1: no bound).
    """

    directory: str | None
    enabled: bool
    min_compile_time_secs: float
    min_entry_size_bytes: int


def settings() -> CacheSettings:
    """JAX's compilation-cache settings now."""
    def read(name: str) -> Any:
        return getattr(jax.config, name)  # the flags are not attributes mypy knows

    return CacheSettings(
        directory=read("jax_compilation_cache_dir") or None,
        enabled=bool(read("jax_enable_compilation_cache")),
        min_compile_time_secs=float(read("jax_persistent_cache_min_compile_time_secs")),
        min_entry_size_bytes=int(read("jax_persistent_cache_min_entry_size_bytes")))


def keep_every_compilation(names: Collection[str]) -> None:
    """Sets the thresholds ``names`` (of :data:`KEEP_EVERY_COMPILATION`) so that JAX's cache
    writes every compilation of this process from now on, however fast or small.

    JAX reads them when it is about to write an entry, so they may change after
    JAX started. Only for a process that does nothing but warm the cache.
    """
    for name in names:
        jax.config.update(name, KEEP_EVERY_COMPILATION[name])


@contextlib.contextmanager
def recorded_events() -> Iterator[list[str]]:
    """The compilation-cache events JAX records while the block runs (any thread's)."""
    events: list[str] = []

    def listen(event: str, **_: object) -> None:
        if event.startswith(_PREFIX):
            events.append(event)

    jax.monitoring.register_event_listener(listen)
    try:
        yield events
    finally:
        jax.monitoring.unregister_event_listener(listen)
