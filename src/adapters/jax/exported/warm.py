"""``Exported.warm``: compile an eager call into JAX's persistent compilation cache.

(``jaxport warm``, :mod:`jaxport.application.cli.warm`, is the command over this service.)

jaxport keeps no compiled code of its own: the eager call of an exported
function is a ``jax.jit``, so JAX's persistent compilation cache serves it in
a later process, as it serves any jitted function. Warming compiles that
same call for the given specs with JAX and checks, from the events JAX records
through the public ``jax.monitoring`` API (a hit, a write, or no use of the
cache at all), that the cache now holds it. The cache is configured as JAX
users configure it (``JAX_COMPILATION_CACHE_DIR``, or
``jax.config.update("jax_compilation_cache_dir", ...)``): :func:`warm` reads
JAX's settings and never changes them; a process that does nothing but warm
(``jaxport warm``) first lowers JAX's write thresholds for itself with
:func:`keep_every_compilation`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping
from typing import Any

import jax

from jaxport.adapters.jax.exported.jax_objects import JaxObjects
from jaxport.domain.errors import CacheConfigError, CallError
from jaxport.adapters.jax import placement

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
_MIN_TIME, _MIN_SIZE = "jax_persistent_cache_min_compile_time_secs", "jax_persistent_cache_min_entry_size_bytes"
KEEP_EVERY_COMPILATION: dict[str, float | int] = {_MIN_TIME: 0.0, _MIN_SIZE: -1}

#: How to configure JAX's cache so that it keeps every compilation.
HOW_TO_CONFIGURE = (
    "set JAX_COMPILATION_CACHE_DIR=/path/to/cache with JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0 "
    "and JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES=-1 in the environment, or the same through "
    "jax.config.update('jax_compilation_cache_dir', ...) before the process's first compilation")


def warm(exp: JaxObjects, jitted: Any, args_specs: tuple[Any, ...], kwargs_specs: dict[str, Any]) -> str:
    """Compiles ``jitted``, ``exp``'s eager call, for the specs into JAX's cache; returns its directory.

    Args:
        jitted: a ``jax.jit`` of the call made for this warm-up, so that its
            compilation reaches JAX's persistent cache even when this process
            compiled the same call already.

    Raises:
        CacheConfigError: no cache is configured, or JAX did not keep the call.
        CallError: no specs were given and some exported dimension is symbolic.
    """
    directory = cache_directory(f"'{exp.fun_name}'")
    if not args_specs and not kwargs_specs:
        args_specs, kwargs_specs = _exported_specs(exp)
    lowered = jitted.lower(*args_specs, **kwargs_specs)
    with recorded_events() as events:
        start = time.perf_counter()
        lowered.compile()
        seconds = time.perf_counter() - start
    if HIT in events or WRITTEN in events or jax.process_index() != 0:
        return directory  # JAX writes from process 0 only; the others read it
    if LOOKED_UP not in events:
        raise CacheConfigError(
            f"JAX compiled '{exp.fun_name}' without looking up its compilation cache at {directory}: "
            "JAX decides at a process's first compilation whether it uses its cache (from "
            "jax_enable_compilation_cache and the platform), and decided it would not. Configure "
            f"the cache before anything is compiled: {HOW_TO_CONFIGURE}.")
    raise CacheConfigError(
        f"JAX compiled '{exp.fun_name}' in {seconds:.2f} s but did not write it to its compilation "
        f"cache at {directory}: JAX writes only compilations that take at least "
        f"jax_persistent_cache_min_compile_time_secs (now {float(_setting(_MIN_TIME)):g} s) and "
        f"entries of at least jax_persistent_cache_min_entry_size_bytes (now "
        f"{int(_setting(_MIN_SIZE))}). To keep every compilation, set "
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0 and JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES=-1 "
        "(or the same through jax.config).")


def keep_every_compilation(environ: Mapping[str, str]) -> tuple[str, ...]:
    """For a process that only warms: JAX's cache writes every compilation, however fast or small.

    By default JAX writes only compilations that took a second or more
    (``jax_persistent_cache_min_compile_time_secs``), so warming a small
    function would write nothing; a user who warms asks for the entry. The
    thresholds that ``environ`` leaves unset (``JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS``,
    ``JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES``) are set, in this process only,
    to keep every compilation; one the environment sets is respected (and
    :func:`warm` says when it keeps JAX from writing).

    Returns:
        The names of JAX's settings it changed.
    """
    names = tuple(name for name in KEEP_EVERY_COMPILATION if name.upper() not in environ)
    for name in names:  # JAX reads them when it is about to write an entry
        jax.config.update(name, KEEP_EVERY_COMPILATION[name])
    return names


def cache_directory(what: str) -> str:
    """The directory of JAX's compilation cache, for warming ``what``.

    Raises:
        CacheConfigError: no cache directory is set, or JAX's cache is turned off.
    """
    directory: str | None = _setting("jax_compilation_cache_dir")
    if not directory:
        raise CacheConfigError(
            f"Cannot warm {what}: no JAX compilation cache is configured (jax_compilation_cache_dir "
            f"is unset). To keep compiled calls across processes, {HOW_TO_CONFIGURE}.")
    if not _setting("jax_enable_compilation_cache"):
        raise CacheConfigError(
            f"Cannot warm {what}: JAX's compilation cache is turned off "
            "(jax_enable_compilation_cache is False); set JAX_ENABLE_COMPILATION_CACHE=1.")
    return directory


def _exported_specs(exp: JaxObjects) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The exported avals as ``jax.ShapeDtypeStruct`` specs (with the recorded shardings
    placed on this process's devices), for an export with static shapes.

    Raises:
        CallError: some exported dimension is symbolic.
    """
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
    args, kwargs = jax.tree_util.tree_unflatten(exp.in_tree, leaves)
    return tuple(args), dict(kwargs)


def _setting(name: str) -> Any:
    """One of JAX's compilation-cache settings now (the flags are not attributes mypy knows)."""
    return getattr(jax.config, name)


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
