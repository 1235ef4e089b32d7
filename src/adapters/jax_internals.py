"""The JAX internals jaxport needs, in one place.

JAX 0.10 has no public API for these; each use names what it needs. The
versions in pyproject.toml are pinned to the range the tests have run
against, and tests/adapters/test_jax_internals.py checks each contract.
"""

from __future__ import annotations

from typing import Any

import jax
from jax.interpreters import mlir

# What: lowering for export (several platforms, constants kept in the module).
# Why internal: `Traced.lower` takes these only through private keywords.
def lower_for_export(traced: jax.stages.Traced, platforms: tuple[str, ...]) -> jax.stages.Lowered:
    """Lowers ``traced`` for ``platforms`` the way an export must."""
    from jax._src import config

    params = mlir.LoweringParameters(
        for_export=True,
        hoist_constants_as_args=False,
        export_ignore_forward_compatibility=config.export_ignore_forward_compatibility.value)
    lowered: jax.stages.Lowered = traced.lower(lowering_platforms=platforms, _private_parameters=params)
    return lowered


# What: the module, compile arguments and platforms of a lowering.
# Why internal: `Lowered` hides kept_var_idx, effects and the shape-poly state.
def lowering_internals(lowered: jax.stages.Lowered) -> tuple[Any, dict[str, Any], tuple[str, ...]]:
    """The ``(ir.Module, compile_args, platforms)`` behind a ``Lowered``."""
    from jax._src.interpreters import pxla

    lowering = lowered._lowering
    if not isinstance(lowering, pxla.MeshComputation):
        raise NotImplementedError(f"Export is supported only for jit; got {type(lowering).__name__}")
    return lowering.stablehlo(), lowering.compile_args, tuple(lowering._platforms)


# What: whether the default backend serializes Shardy attributes (True on CPU).
# Why internal: the flag lives on the jaxlib client object only.
def backend_serializes_with_sdy() -> bool:
    """The ``use_mixed_serialization`` flag that jax.export passes."""
    from jax._src import xla_bridge

    return bool(xla_bridge.get_backend().serialize_with_sdy)


# What: registering the LAPACK FFI handlers with XLA before a module that calls
# them is compiled. Why internal: jax does it lazily in its linalg lowering.
def initialize_cpu_lapack() -> None:
    """Makes the CPU LAPACK custom-call targets available to XLA."""
    from jax._src.lax import linalg

    linalg.initialize_lapack()


# What: the number of devices of the computation being lowered.
# Why internal: the axis context of a lowering rule is not public.
def lowering_num_devices(ctx: mlir.LoweringRuleContext) -> int:
    """The device count of the computation that ``ctx`` lowers."""
    from jax._src import sharding_impls

    axis_context = ctx.module_context.axis_context
    if isinstance(axis_context, sharding_impls.ShardingContext):
        return int(axis_context.num_devices)
    if isinstance(axis_context, sharding_impls.SPMDAxisContext):
        return int(axis_context.mesh.size)
    raise NotImplementedError(f"Unsupported axis context {type(axis_context).__name__}")


# What: structural differences between two pytrees, with key paths.
# Why internal: `tree_util.equality_errors` is not exported by jax.tree_util.
def tree_equality_errors(a: Any, b: Any) -> list[tuple[Any, str, str, str]]:
    """``(path, thing1, thing2, explanation)`` for each difference of ``a`` and ``b``."""
    from jax._src import tree_util

    return list(tree_util.equality_errors(a, b))


# What: recognising the "no sharding given" marker of a lowering.
# Why internal: `UnspecifiedValue` is not exported.
def is_unspecified_sharding(sharding: Any) -> bool:
    """Whether ``sharding`` is JAX's marker for an unspecified sharding."""
    from jax._src import sharding_impls

    return isinstance(sharding, sharding_impls.UnspecifiedValue)  # type: ignore[attr-defined]
