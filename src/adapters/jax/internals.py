"""The JAX internals jaxport needs, in one place.

JAX 0.10 has no public API for these; each use names what it needs. The
versions in pyproject.toml are pinned to the range the tests have run
against, and tests/adapters/test_jax_internals.py checks the contract of
each (the helpers that run only inside lowering rules through the calls of
exported functions in tests/e2e).
"""

from __future__ import annotations

import importlib
from typing import Any

# Every module below is loaded by `import jax` itself: importing them here costs nothing more.
import jax
from jax._src import config as _config
from jax._src import core as _core
from jax._src import dtypes as _dtypes
from jax._src import effects as _effects
from jax._src import mesh as _mesh
from jax._src import sharding_impls as _sharding_impls
from jax._src import tree_util as _tree_util
from jax._src import xla_bridge as _xla_bridge
from jax._src.interpreters import mlir as _mlir_internal
from jax._src.interpreters import partial_eval as _partial_eval
from jax._src.interpreters import pxla as _pxla
from jax._src.lax import linalg as _linalg
from jax.interpreters import mlir
from jaxlib import xla_client as _xla_client

from jaxport.adapters.jax import versions as jax_versions

# What: JAX's primitive class and the error of an inconclusive dimension
# comparison, which `jax.extend.core` re-exports (the same objects).
# Why internal: importing any `jax.extend` module first imports all of them
# (Pallas among them): about 20 ms of a fresh process that loads an artifact
# and calls it, which needs none of them (tests/adapters/test_jax_internals.py
# checks that the objects are `jax.extend.core`'s).
Primitive = _core.Primitive
InconclusiveDimensionOperation = _core.InconclusiveDimensionOperation

# What: lowering for export (several platforms, constants kept in the module).
# Why internal: `Traced.lower` takes these only through private keywords.
def lower_for_export(traced: jax.stages.Traced, platforms: tuple[str, ...],
                     override_lowering_rules: tuple[tuple[Any, Any], ...] | None = None) -> jax.stages.Lowered:
    """Lowers ``traced`` for ``platforms`` the way an export must (with ``override_lowering_rules``,
    pairs of a primitive and the lowering rule to use for it instead of JAX's)."""
    params = mlir.LoweringParameters(
        override_lowering_rules=override_lowering_rules,  # type: ignore[arg-type]  # (primitive, rule) pairs
        for_export=True,
        hoist_constants_as_args=False,
        export_ignore_forward_compatibility=_config.export_ignore_forward_compatibility.value)
    lowered: jax.stages.Lowered = traced.lower(lowering_platforms=platforms, _private_parameters=params)
    return lowered


# What: the module, compile arguments and platforms of a lowering.
# Why internal: `Lowered` hides kept_var_idx, effects and the shape-poly state.
def lowering_internals(lowered: jax.stages.Lowered) -> tuple[Any, dict[str, Any], tuple[str, ...]]:
    """The ``(ir.Module, compile_args, platforms)`` behind a ``Lowered``."""
    lowering = lowered._lowering
    if not isinstance(lowering, _pxla.MeshComputation):
        raise NotImplementedError(f"Export is supported only for jit; got {type(lowering).__name__}")
    return lowering.stablehlo(), lowering.compile_args, tuple(lowering._platforms)


# What: the user-visible ("hi") types of a lowering's flat arguments and results, where one is an
# unreduced-sharded array, whose lowered type has one leading dimension per unreduced mesh axis.
# Why internal: `Lowered._in_types`/`_out_types`, `AbstractValue.is_high` and `lo_ty` are private
# (JAX 0.12.1's jax.export reads them; older JAX has no hi types).
def high_types(lowered: jax.stages.Lowered) -> tuple[Any, tuple[Any, ...], Any, tuple[Any, ...]] | None:
    """``(in tree, hi in avals, out tree, hi out avals)`` of ``lowered`` when some aval is high (the
    in avals of the flat arguments only), else None."""
    in_types, out_types = getattr(lowered, "_in_types", None), getattr(lowered, "_out_types", None)
    if in_types is None or out_types is None:
        return None
    (in_tree, hi_in_all), (out_tree, hi_out) = in_types, out_types
    hi_in = tuple(hi_in_all[len(hi_in_all) - in_tree.num_leaves:])
    if not any(getattr(a, "is_high", False) for a in (*hi_in, *hi_out)):
        return None
    return in_tree, hi_in, out_tree, tuple(hi_out)


def is_high(aval: Any) -> bool:
    """Whether ``aval`` is a user-visible type that lowers to another (an unreduced-sharded array)."""
    return bool(getattr(aval, "is_high", False))


def low_type(aval: Any) -> Any:
    """The lowered type of a high ``aval`` (its one low type), or ``aval`` itself."""
    if not is_high(aval):
        return aval
    low, = aval.lo_ty()
    return low


def lower_value(aval: Any, value: Any) -> list[Any]:
    """The low values of ``value`` of the high type ``aval``."""
    return list(aval.lower_val(value))


def raise_value(aval: Any, low: Any) -> Any:
    """The value of the high type ``aval`` whose low value is ``low``."""
    return aval.raise_val(low)


# What: a primitive whose operands or results may be of high types: JAX asks `is_high` of each
# binding and, where it answers True, binds `to_lojax` instead (on the low values).
# Why internal: `Primitive.is_high` and `Primitive.to_lojax` are JAX's private protocol.
def define_high_rules(primitive: Any, is_high_rule: Any, to_lojax_rule: Any) -> None:
    """Gives ``primitive`` the rules JAX asks when high types may reach it."""
    primitive.is_high = is_high_rule
    primitive.to_lojax = to_lojax_rule


# What: whether the default backend serializes Shardy attributes (True on CPU).
# Why internal: the flag lives on the jaxlib client object only.
def backend_serializes_with_sdy() -> bool:
    """The ``use_mixed_serialization`` flag that jax.export passes."""
    return bool(_xla_bridge.get_backend().serialize_with_sdy)


# What: registering the LAPACK FFI handlers with XLA before a module that calls
# them is compiled. Why internal: jax does it lazily in its linalg lowering.
def initialize_cpu_lapack() -> None:
    """Makes the CPU LAPACK custom-call targets available to XLA."""
    _linalg.initialize_lapack()


# What: the number of devices of the computation being lowered.
# Why internal: the axis context of a lowering rule is not public.
def lowering_num_devices(ctx: mlir.LoweringRuleContext) -> int:
    """The device count of the computation that ``ctx`` lowers."""
    axis_context = ctx.module_context.axis_context
    if isinstance(axis_context, _sharding_impls.ShardingContext):
        return int(axis_context.num_devices)
    if isinstance(axis_context, _sharding_impls.SPMDAxisContext):
        return int(axis_context.mesh.size)
    raise NotImplementedError(f"Unsupported axis context {type(axis_context).__name__}")


# What: structural differences between two pytrees, with key paths.
# Why internal: `tree_util.equality_errors` is not exported by jax.tree_util.
def tree_equality_errors(a: Any, b: Any) -> list[tuple[Any, str, str, str]]:
    """``(path, thing1, thing2, explanation)`` for each difference of ``a`` and ``b``."""
    return list(_tree_util.equality_errors(a, b))


# What: recognising the "no sharding given" marker of a lowering.
# Why internal: `UnspecifiedValue` is not exported.
def is_unspecified_sharding(sharding: Any) -> bool:
    """Whether ``sharding`` is JAX's marker for an unspecified sharding."""
    return isinstance(sharding, _sharding_impls.UnspecifiedValue)  # type: ignore[attr-defined]


# What: attaching a sharding to an abstract value, as deserialization does.
# Why internal: `core.update_aval_with_sharding` is not exported.
def update_aval_with_sharding(aval: Any, sharding: Any) -> Any:
    """``aval`` carrying ``sharding`` (unchanged when it is None)."""
    return _core.update_aval_with_sharding(aval, sharding)


# What: the memory-space enum of abstract values.
# Why internal: `core.MemorySpace` is not exported.
def memory_space_type() -> Any:
    """JAX's ``MemorySpace`` enum (``Device``, ``Host``, ``Any``)."""
    return _core.MemorySpace


# What: the empty abstract mesh and abstract devices of meshes.
# Why internal: neither is exported by jax.sharding.
def empty_abstract_mesh() -> Any:
    """The abstract mesh with no axes (single-device shardings)."""
    return _mesh.empty_abstract_mesh


def abstract_device(device_kind: str, num_cores: int | None, platform: str) -> Any:
    """An abstract device, as abstract meshes record them."""
    return _mesh.AbstractDevice(device_kind, num_cores, platform)


# What: the effect types that may appear in lowered modules.
# Why internal: `effects.lowerable_effects` is not exported.
def lowerable_effect_types() -> tuple[type, ...]:
    """The registered lowerable effect types, for reading effects by name."""
    return tuple(_effects.lowerable_effects._effect_types)


# What: making a class usable as a shape dimension and as a weak-typed scalar.
# Why internal: JAX keeps these registries (keyed by exact type) in core and dtypes.
def register_dimension_type(cls: type) -> None:
    """Registers ``cls`` (a symbolic dimension class) with JAX's type registries."""
    _core.pytype_aval_mappings[cls] = lambda _: _core.dim_value_aval()
    _dtypes.register_weak_scalar_type(cls)
    _dtypes.python_scalar_types.add(cls)
    _dtypes.python_scalar_types_to_dtypes[cls] = _dtypes.python_scalar_types_to_dtypes[int]
    _dtypes.register_canonicalize_value_handler(cls, None)


# What: the abstract value of a dimension used as a value, and its lowering.
# Why internal: `core.dim_value_aval` and `mlir.eval_dynamic_shape` are not exported.
def dim_value_aval() -> Any:
    """The abstract value of a dimension size as a JAX value (i32, or i64 with x64)."""
    return _core.dim_value_aval()


def eval_dynamic_dim(ctx: mlir.LoweringRuleContext, dim: Any) -> Any:
    """The IR value of a symbolic dimension inside a lowering rule."""
    result, = _mlir_internal.eval_dynamic_shape(ctx, (dim,))
    return result


# What: a sharding constraint on an IR value inside a lowering rule.
# Why internal: `mlir.wrap_with_sharding_op` and `NamedSharding._to_sdy_sharding`
# are not exported.
def constrain_to_sharding(ctx: mlir.LoweringRuleContext, value: Any, aval: Any, sharding: Any) -> Any:
    """``value`` constrained to the named ``sharding`` (Shardy)."""

    physical = _core.physical_aval(aval)
    return _mlir_internal.wrap_with_sharding_op(
        ctx, value, physical, sharding._to_sdy_sharding(physical.ndim))


# What: the constraints of a `jax.export` symbolic scope, as the user wrote them.
# Why internal: `SymbolicScope` keeps them only in its private `_explicit_constraints`.
def foreign_scope_constraints(scope: Any) -> tuple[str, ...]:
    """The constraint strings of a ``jax.export.SymbolicScope``, in the order given."""
    return tuple(c.debug_str for c in getattr(scope, "_explicit_constraints", ()))


# What: whether a type is registered as a custom pytree node (namedtuples are not: JAX
# handles them natively). Why internal: the registry `tree_util._registry` has no public query.
def is_registered_pytree_node(nodetype: type) -> bool:
    """Whether ``nodetype`` was registered with ``jax.tree_util.register_pytree_node``."""
    return nodetype in _tree_util._registry


# What: the platform an export targets by default ('gpu' becomes 'cuda' or 'rocm').
# Why internal: `xla_bridge.canonicalize_platform` tells CUDA from ROCm; no public function does.
def default_export_platform() -> str:
    """The default backend's platform, as ``jax.export`` names it."""
    platform: str = _xla_bridge.canonicalize_platform(jax.default_backend())
    return platform


# What: a GSPMDSharding (an HLO sharding over a device list) as a named sharding.
# Why internal: reading the HLO sharding (`_hlo_sharding`, its tiling queries) and turning it
# into a PartitionSpec over a mesh (`_gspmd_to_named_sharding_via_mesh`) have no public API.
def gspmd_as_named_sharding(sharding: Any, ndim: int, mesh: Any | None) -> Any:
    """``sharding`` (a ``GSPMDSharding``) as a ``NamedSharding`` over an abstract mesh.

    Over ``mesh`` when given; else replicated shardings use the empty mesh and
    iota-tiled ones a mesh of axes ``_axis_0, _axis_1, ...`` of the tile sizes.

    Raises:
        TypeError: the sharding has no such form (tuple, or non-iota tiling).
    """

    if mesh is not None:
        return _sharding_impls._gspmd_to_named_sharding_via_mesh(sharding, mesh)
    hlo = sharding._hlo_sharding
    if hlo.tuple_elements() or not (hlo.is_replicated() or hlo.is_tiled()):
        raise TypeError(f"Cannot convert GSPMDSharding {sharding} into NamedSharding.")
    if hlo.is_replicated():
        return jax.sharding.NamedSharding(_mesh.empty_abstract_mesh,
                                          jax.sharding.PartitionSpec(*([None] * ndim)),
                                          memory_kind=sharding.memory_kind)
    if not hlo.is_tile_assignment_iota():
        raise TypeError(f"Cannot convert GSPMDSharding {sharding} into NamedSharding.")
    sizes = tuple(hlo.get_axis_sizes())
    names = tuple(f"_axis_{i}" for i in range(len(sizes)))
    # JAX 0.12 (`mesh.abstract_device_from`) records in this mesh the abstract device of the
    # sharding's first device (kind, cores, platform); JAX 0.10 records none.
    device_from = getattr(_mesh, "abstract_device_from", None)
    abstract = (_mesh.AbstractMesh(sizes, names) if device_from is None else
                _mesh.AbstractMesh(sizes, names, abstract_device=device_from(sharding._device_assignment[0])))
    return _sharding_impls._gspmd_to_named_sharding_via_mesh(sharding, abstract)


# What: a sharding as XLA's HLO sharding (``HloSharding``, without mesh or devices): of a named
# sharding for an array of ``ndim`` dimensions, or parsed from a serialized ``xla.OpSharding``.
# Why internal: ``NamedSharding._to_xla_hlo_sharding`` is private, and ``HloSharding`` and
# ``OpSharding`` live in jaxlib's ``xla_client``, which JAX does not re-export.
def named_as_hlo_sharding(sharding: jax.sharding.NamedSharding, ndim: int) -> Any:
    """The ``HloSharding`` of ``sharding`` for an array of ``ndim`` dimensions."""
    return sharding._to_xla_hlo_sharding(ndim)


def hlo_sharding_from_proto(proto: bytes) -> Any:
    """The ``HloSharding`` of a serialized ``xla.OpSharding`` protocol buffer."""
    op_sharding = _xla_client.OpSharding()
    op_sharding.ParseFromString(proto)
    return _xla_client.HloSharding.from_proto(op_sharding)


def is_gspmd_sharding(sharding: Any) -> bool:
    """Whether ``sharding`` is a ``GSPMDSharding`` (not exported by ``jax.sharding``)."""
    return isinstance(sharding, _sharding_impls.GSPMDSharding)


def use_shardy_partitioner() -> bool:
    """Whether JAX partitions with Shardy: always from JAX 0.12.1, else as ``jax_use_shardy_partitioner`` says."""
    return jax_versions.shardy_only() or bool(_config.use_shardy_partitioner.value)


# What: whether the current trace stages a jaxpr out (``jax.jit``, ``jax.eval_shape``,
# ``jax.make_jaxpr`` and export tracing), rather than running eagerly or transforming.
# Why internal: JAX has no public query of the current trace
# (``jax.core.unsafe_am_i_under_a_jit_DO_NOT_USE`` is deprecated and prints the trace stack).
def is_staging() -> bool:
    """Whether the innermost trace is the one that builds a jaxpr."""
    return isinstance(_core.trace_ctx.trace, _partial_eval.DynamicJaxprTrace)


# What: whether no trace at all is active (plain eager evaluation: no jit, grad, vmap...).
# Why internal: as for `is_staging`, JAX has no public query of the current trace.
def is_eager() -> bool:
    """Whether the innermost trace is JAX's eager evaluation (no transformation is running)."""
    return isinstance(_core.trace_ctx.trace, _core.EvalTrace)



# What: shape refinement of a module whose `main` takes static shapes (constants of
# `jax.global_constant` arguments, such as the platform index, propagated into the callees,
# symbolic shapes made static, `shape_assertion`s checked and erased), as XLA's path runs it
# before compiling. Why internal: `refine_polymorphic_shapes` lives in `jax._src.interpreters.mlir`;
# an ahead-of-time compiler (IREE) needs the refined module, which JAX makes only inside `compile`.
def refine_polymorphic_shapes(module: Any) -> Any:
    """The refined copy of ``module`` (an ``ir.Module``, in a new context).

    Raises:
        ValueError: refinement failed (a shape assertion is false for these shapes).
    """
    return _mlir_internal.refine_polymorphic_shapes(module)


#: JAX's own result namedtuples, by the name jaxport serializes them under: (module, class name).
JAX_RESULT_TYPES: dict[str, tuple[str, str]] = {
    **{f"jax.numpy.linalg.{n}": ("jax._src.numpy.linalg", n)
       for n in ("EighResult", "EigResult", "QRResult", "SlogdetResult", "SVDResult")},
    **{f"jax.numpy.{n}": ("jax._src.numpy.setops", f"_{n}")
       for n in ("UniqueAllResult", "UniqueCountsResult", "UniqueInverseResult")},
    "jax.scipy.stats.ModeResult": ("jax._src.scipy.stats._core", "ModeResult"),
    "jax.scipy.optimize.OptimizeResults": ("jax._src.scipy.optimize.minimize", "OptimizeResults"),
}


# What: the namedtuple types JAX's own functions return (`jnp.linalg.qr`'s `QRResult`, ...).
# Why internal: JAX exports none of them by a public name (they live in `jax._src`).
def jax_result_name(nodetype: type) -> str | None:
    """The serialized name of one of :data:`JAX_RESULT_TYPES`, or None for another type."""
    place = (getattr(nodetype, "__module__", ""), getattr(nodetype, "__qualname__", ""))
    for name, where in JAX_RESULT_TYPES.items():
        if where == place:
            return name
    return None


def jax_result_type(name: str) -> type | None:
    """The type :data:`JAX_RESULT_TYPES` names ``name`` (its module imported now), or None."""
    where = JAX_RESULT_TYPES.get(name)
    if where is None:
        return None
    found = getattr(importlib.import_module(where[0]), where[1], None)
    return found if isinstance(found, type) else None
