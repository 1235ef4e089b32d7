"""Compiling a lowered call, and saving and loading its executable as plain bytes.

The backend client serializes a compiled executable to bytes and loads it
back (``Client.serialize_executable`` / ``deserialize_executable``); nothing
here pickles, unlike ``jax.experimental.serialize_executable``. A loaded
executable is wrapped in a ``jax.stages.Compiled`` built from the same
lowering that would have compiled it, so a call through it handles its
arguments and results as a freshly compiled one does.
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
from collections.abc import Callable
from typing import Any

import jax

from . import jax_internals

#: JAX settings that change the compiled code (read from ``jax.config``).
_COMPILER_SETTINGS = (
    "jax_enable_x64", "jax_default_matmul_precision", "jax_use_shardy_partitioner",
    "jax_exec_time_optimization_effort", "jax_memory_fitting_effort", "jax_optimization_level",
    "jax_memory_fitting_level", "jax_compiler_enable_remat_pass", "jax_xla_profile_version",
)
#: Environment variables that change the compiled code.
_COMPILER_ENV = ("XLA_FLAGS", "LIBTPU_INIT_ARGS")


class XlaExecutables:
    """Lowers, compiles, serializes and loads the executables of eager calls."""

    def lower(self, jitted: Callable[..., Any], args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> jax.stages.Lowered:
        """``jitted.lower(*args, **kwargs)`` for a ``jax.jit`` function."""
        lowered: jax.stages.Lowered = jitted.lower(*args, **kwargs)  # type: ignore[attr-defined]
        return lowered

    def cacheable(self, lowered: jax.stages.Lowered) -> bool:
        """Whether the executable of ``lowered`` is fully described by its bytes.

        Computations over several processes are not: each process compiles
        its own part, and the processes would share one key.
        """
        return (jax.process_count() == 1
                and jax_internals.lowering_is_self_contained(lowered)
                and jax_internals.lowering_devices(lowered) is not None)

    def program_digest(self, lowered: jax.stages.Lowered) -> str:
        """SHA-256 (hex) of the lowered module's text without locations.

        Locations (the Python call sites) change with the caller but not the
        code XLA generates, so they stay out of the key.
        """
        module: Any = lowered.compiler_ir("stablehlo")
        text = module.operation.get_asm(enable_debug_info=False, binary=True)
        return hashlib.sha256(text).hexdigest()

    def call_signature(self, lowered: jax.stages.Lowered) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The flat input abstract values and shardings of ``lowered``, as text."""
        avals, shardings = jax_internals.lowering_inputs(lowered)
        return tuple(str(a.str_short()) for a in avals), tuple(str(s) for s in shardings)

    def environment(self, lowered: jax.stages.Lowered) -> dict[str, Any]:
        """Where the executable of ``lowered`` runs, and what compiles it (key fields)."""
        from jaxlib import version as jaxlib_version

        import jaxport

        devices = list(jax_internals.lowering_devices(lowered))
        first = devices[0]
        return {
            "platform": first.platform,
            "platform_version": str(first.client.platform_version),
            "device_kind": first.device_kind,
            "device_count": len(devices),
            "device_ids": tuple(int(d.id) for d in devices),
            "process_count": jax.process_count(),
            "host": _host_fingerprint(),
            "versions": (("jax", jax.__version__), ("jaxlib", jaxlib_version.__version__),
                         ("jaxport", jaxport.__version__)),
            "compiler_flags": tuple(
                [(name, repr(getattr(jax.config, name, None))) for name in _COMPILER_SETTINGS]
                + [(name, os.environ.get(name, "")) for name in _COMPILER_ENV]),
        }

    def compile(self, lowered: jax.stages.Lowered) -> tuple[jax.stages.Compiled, bytes | None]:
        """The compiled call, and its executable as bytes (None if the backend cannot)."""
        compiled = lowered.compile()
        try:
            executable = jax_internals.xla_executable_of(compiled)
            payload: bytes | None = executable.client.serialize_executable(executable)
        except Exception:  # a backend without executable serialization
            payload = None
        return compiled, payload

    def load(self, lowered: jax.stages.Lowered, payload: bytes) -> jax.stages.Compiled:
        """The compiled call whose executable ``payload`` holds.

        Raises:
            Exception: whatever the backend raises for bytes it cannot load.
        """
        devices = jax_internals.lowering_devices(lowered)
        executable = devices[0].client.deserialize_executable(payload, devices)
        return jax_internals.compiled_from_executable(lowered, executable)


@functools.lru_cache(maxsize=1)
def _host_fingerprint() -> str:
    """The machine architecture and a digest of the CPU's feature flags."""
    flags = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            flags = next((line for line in info if line.startswith(("flags", "Features"))), "")
    except OSError:
        pass
    return f"{platform.machine()}:{hashlib.sha256(flags.encode()).hexdigest()[:16]}"
