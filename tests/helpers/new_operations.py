"""Functions that reach the converters with JAX 0.12.1's new operations, exported with its forward-compatibility gate on or off.

``lax.fma`` lowers to ``stablehlo.fma`` whatever the gate says; with the gate
off (``jax_export_ignore_forward_compatibility``, scoped here with JAX's own
config context), ``exp2``/``log2`` lower to ``stablehlo.exp2``/``stablehlo.log2``
and ``lgamma``/``digamma`` to custom calls of JAX's kernels (``cpu_lgamma_ffi``,
``cpu_digamma_ffi``); with it on, to ``exp``/``log`` and ln 2 and to JAX's own
decomposition (a ``func.call @lgamma_impl``, float32 computed in float64).
JAX 0.12.1's export writes modules for StableHLO 1.22, which has no ``fma``
(and turns ``exp2``/``log2`` back into ``exp``/``log``): the exports here are
jaxport's own export service writing for the newest StableHLO this jaxlib
has, as a JAX whose export targets StableHLO 1.24 or later writes them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax._src import config as jax_config  # the gate's own context manager (JAX has no public one)

import jaxport
from jaxport.adapters.jax.lowering.service import ExportService
from jaxport.adapters.mlir.module import MlirStableHlo
from jaxport.application import wiring
from jaxport.domain.converted.numerics import tolerance_for

#: The kernels' custom calls, which jaxport 0.12.1's allowlist may not hold yet.
KERNELS = ("cpu_lgamma_ffi", "cpu_digamma_ffi")
#: What the module holds, by the gate: off, on.
GATE_OFF_OPERATIONS = ("stablehlo.fma", "stablehlo.exp2", "stablehlo.log2", "@cpu_lgamma_ffi", "@cpu_digamma_ffi")
GATE_ON_OPERATIONS = ("stablehlo.fma", "stablehlo.exponential", "stablehlo.log", "@lgamma_impl", "@digamma_impl")
NARROW = ("float16", "bfloat16")


class NewestStableHlo(MlirStableHlo):
    """jaxport's StableHLO port, writing exports for the newest StableHLO this jaxlib has."""

    def export_target_version(self) -> str:
        """The newest version this jaxlib reads (1.25 with jaxlib 0.12.1)."""
        return self.newest_readable_version()


def gate_scope(off: bool) -> contextlib.AbstractContextManager[Any]:
    """JAX's forward-compatibility gate, off (``jax_export_ignore_forward_compatibility``) or on, in a scope."""
    manager: contextlib.AbstractContextManager[Any] = jax_config.export_ignore_forward_compatibility(off)
    return manager


def five(x: jax.Array, y: jax.Array, z: jax.Array, w: jax.Array) -> tuple[jax.Array, ...]:
    """The five operations in one function: one conversion per target and dtype."""
    return lax.fma(x, y, z), jnp.exp2(x), jnp.log2(y), lax.lgamma(w), lax.digamma(w)


def five_twice(*args: jax.Array) -> tuple[jax.Array, ...]:
    """:func:`five` on two sets of four arrays (float16 and bfloat16: one conversion for both)."""
    return five(*args[:4]) + five(*args[4:])


def three(x: jax.Array, y: jax.Array, z: jax.Array, w: jax.Array) -> tuple[jax.Array, ...]:
    """The three StableHLO operations, without JAX's kernels."""
    return lax.fma(x, y, z), jnp.exp2(x), jnp.log2(y + w * w)


def three_and_kernels(x: jax.Array, y: jax.Array, z: jax.Array, w: jax.Array) -> tuple[jax.Array, ...]:
    """:func:`five` with ``x * y + z`` for ``fma`` (which JAX 0.12.1's export cannot write)."""
    return x * y + z, jnp.exp2(x), jnp.log2(y), lax.lgamma(w), lax.digamma(w)


def export(function: Callable[..., Any], dtypes: Sequence[str], *, gate_off: bool,
           symbolic: bool = False) -> jaxport.Exported:
    """``function`` of one ``(16,)`` array per dtype (``(n,)`` when ``symbolic``), exported for the newest
    StableHLO with the gate as told."""
    size = jaxport.symbolic_shape("n")[0] if symbolic else 16
    specs = [jax.ShapeDtypeStruct((size,), d) for d in dtypes]
    service = ExportService(wiring.lowerer(), NewestStableHlo())
    with gate_scope(gate_off):
        return service.export(jax.jit(function), platforms=None,
                              disabled_checks=[jaxport.DisabledSafetyCheck.custom_call(k) for k in KERNELS],
                              args_specs=specs, kwargs_specs={})


def inputs(dtype: str, n: int = 16) -> list[np.ndarray]:
    """x anywhere, y positive (log2), z small, w on both sides of zero away from lgamma's poles."""
    rng = np.random.default_rng(7)
    w = rng.uniform(-3.9, 6.0, n)
    w = np.where((w < 0) & (np.abs(w - np.round(w)) < 0.15), w + 0.3, w)
    arrays = [rng.uniform(-4, 4, n), rng.uniform(0.05, 9.0, n), rng.uniform(-1, 1, n), w]
    return [np.asarray(a, jnp.dtype(dtype)) for a in arrays]


def expected(function: Callable[..., Any], args: Sequence[np.ndarray]) -> list[np.ndarray]:
    """``jax.jit(function)``'s outputs on this CPU; float16 and bfloat16 computed in float32 and rounded
    (XLA's CPU has no ``fma`` for them, and computes their elementwise operations in float32)."""
    wide = [a.astype(np.float32) if a.dtype.name in NARROW else a for a in args]
    out = jax.jit(function)(*wide)
    dtypes = [o.dtype for o in jax.eval_shape(function, *args)]
    return [np.asarray(o).astype(d) for o, d in zip(out, dtypes)]


def assert_close(got: Sequence[Any], want: Sequence[np.ndarray]) -> None:
    """Each output within its dtype's default tolerance of JAX's, normwise (as ``check --numerics`` compares)."""
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        g = np.asarray(g)
        assert g.shape == w.shape and g.dtype == w.dtype, (i, g.shape, g.dtype, w.dtype)
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        error, scale = float(np.max(np.abs(g64 - w64))), float(np.max(np.abs(w64)))
        tolerance = tolerance_for(w.dtype.name)
        assert tolerance.allows(error, scale), f"output {i}: error {error:g} for values up to {scale:g}"
