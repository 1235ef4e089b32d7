"""Exports that an older JAX cannot run (for the consumers' tests): lgamma and digamma as JAX 0.12.1's custom calls, ``stablehlo.fma``."""

from __future__ import annotations

import jax
import jax.numpy as jnp

import jaxport

SPEC = jax.ShapeDtypeStruct((3,), jnp.float32)
#: Whether this JAX lowers lgamma and digamma to the custom calls JAX 0.12.1 added (past its
#: forward-compatibility gate), and whether its StableHLO has fma.
NEWEST_JAX = tuple(int(p) for p in jax.__version__.split(".")[:3]) >= (0, 12, 1)


def special(x: jax.Array) -> jax.Array:
    return jax.lax.lgamma(x) + jax.lax.digamma(x)


def special_functions() -> jaxport.Exported:
    """:func:`special` exported past JAX's forward-compatibility gate: it calls ``cpu_lgamma_ffi`` and
    ``cpu_digamma_ffi`` (on JAX 0.12.1)."""
    jax.config.update("jax_export_ignore_forward_compatibility", True)
    try:
        return jaxport.export(jax.jit(special), platforms=["cpu"])(SPEC)
    finally:
        jax.config.update("jax_export_ignore_forward_compatibility", False)


def fused_multiply_add() -> jaxport.Exported:
    """``fma(a, b, c)`` as ``stablehlo.fma``, in a module for this jaxlib's newest StableHLO (jax.export's own
    target, 1.22.0 on JAX 0.12.1, has no fma: JAX refuses to export it)."""
    from jaxlib.mlir import ir
    from jaxport.adapters.mlir import bindings

    text = jax.jit(jax.lax.fma).lower(SPEC, SPEC, SPEC).as_text()
    with bindings.make_context() as context:
        module = bindings.serialize_portable_artifact(ir.Module.parse(text, context), bindings.newest_readable_version(),
                                                      False)
    return jaxport.Exported.from_module(module, in_specs=(SPEC, SPEC, SPEC), out_specs=SPEC, platforms=("cpu",),
                                        calling_convention_version=10, fun_name="fused")
