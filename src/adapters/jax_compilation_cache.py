"""JAX's persistent compilation cache, as ``warm`` sees it: its settings and what it did.

Compiled calls of exported functions are cached by JAX itself, configured as
JAX users configure it (``JAX_COMPILATION_CACHE_DIR``, or
``jax.config.update("jax_compilation_cache_dir", ...)``); this module reads
those settings and never changes them. What JAX did during a compilation (a
hit, a write, or no use of the cache at all) is told by the events JAX
records through the public ``jax.monitoring`` API.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
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
