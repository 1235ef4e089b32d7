"""Calling an exported module from JAX: the ``jaxport_call`` primitive.

The primitive has an abstract evaluation (the call-side checks and the output
avals), an eager implementation (a compiled, cached ``jax.jit`` of itself), a
lowering rule that merges the exported module into the caller's module, and a
batching rule (a sequential map over the batch).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
from jax import lax
from jax.core import ShapedArray
from jax.extend import core as jex_core
from jax.extend.mlir import ir
from jax.extend.mlir.dialects import func as func_dialect
from jax.extend.mlir.dialects import stablehlo as hlo
from jax.interpreters import batching, mlir

from ..domain.artifact import NamedShardingRecord
from ..domain.call_checks import check_arguments, check_shardings_divide
from ..domain.errors import (
    ArtifactCallError,
    ArtifactCallValueError,
    DeviceCountError,
    JaxportError,
    PartitionerMismatchError,
)
from ..domain.module_bytes import ModuleBytes
from ..domain.platforms import callee_platform_indices
from ..domain.safety import DisabledSafetyCheck
from ..domain.specs import ArraySpec
from ..domain.symbolic import call_output_shapes
from . import jax_internals
from .callee_module import CalleeModule
from .foreign_dims import mirror_shapes
from .jax_avals import specs_of


@dataclass(frozen=True, eq=False)
class CallTarget:  # not slots: is_symbolic is a cached property
    """What the primitive needs of an exported function (hashed by identity).

    It is a primitive parameter, so it appears in jaxprs: its ``repr`` is short.
    """

    fun_name: str
    in_avals: tuple[ShapedArray, ...]
    out_avals: tuple[ShapedArray, ...]
    in_specs: tuple[ArraySpec, ...]
    arg_paths: tuple[str, ...]
    platforms: tuple[str, ...]
    disabled_checks: tuple[DisabledSafetyCheck, ...]
    kept_var_idx: tuple[int, ...]
    uses_global_constants: bool
    nr_devices: int
    #: The portable artifact (bytes, or a function that makes them once).
    module_bytes: ModuleBytes = ModuleBytes()
    vjp: Callable[[], CallTarget] | None = None
    #: For the exported VJP of a function with that many flat inputs: the
    #: function is ``(x, ct) -> J(x)^T ct``, which forward mode exploits.
    vjp_of_arity: int | None = None
    #: The target of the function vmapped over axis 0 of the flat arguments
    #: marked True, for a batch size; None when only a sequential map is possible.
    batched: Callable[[tuple[bool, ...], int], CallTarget] | None = None
    #: JAX effect objects; ``main`` threads one token per ordered effect.
    ordered_effects: tuple[Any, ...] = ()
    unordered_effects: tuple[Any, ...] = ()
    #: JAX shardings to constrain arguments and results to (None: unspecified),
    #: and the same input shardings as domain records, for the call-side checks.
    in_shardings: tuple[Any, ...] = ()
    out_shardings: tuple[Any, ...] = ()
    in_sharding_records: tuple[NamedShardingRecord | None, ...] = ()

    def __repr__(self) -> str:
        return f"<exported {self.fun_name}>"

    def parse_module(self, context: Any) -> Any:
        """The module as a new ``ir.Module`` in ``context``, deserialized once per target.

        See :mod:`jaxport.adapters.callee_module`: later lowerings, whatever
        the call site or shapes, parse plain MLIR bytecode. (The module an
        in-process export still holds is not used: the portable round trip
        is what makes it refinable by the caller, as a loaded artifact is.)
        """
        return self._callee.module_in(context)

    @functools.cached_property
    def _callee(self) -> CalleeModule:
        return CalleeModule(lambda: self.module_bytes)

    @functools.cached_property
    def has_custom_calls(self) -> bool:
        """Whether the module calls custom-call targets (LAPACK, ...)."""
        return b"custom_call" in self.module_bytes

    @functools.cached_property
    def out_avals_are_plain(self) -> tuple[bool, ...]:
        """For each output, whether its aval is the one its shape and dtype alone make.

        Such an aval (no sharding, no manual axes) is made anew for a call's
        shape without ``update``'s sharding checks, which have nothing to check.
        """
        return tuple(ShapedArray(a.shape, a.dtype, a.weak_type, memory_space=a.memory_space) is a
                     for a in self.out_avals)

    @functools.cached_property
    def is_symbolic(self) -> bool:
        """Whether some input dimension is symbolic (outputs are then solved per call)."""
        return any(s.is_symbolic for s in self.in_specs)


jaxport_call_p = jex_core.Primitive("jaxport_call")
jaxport_call_p.multiple_results = True


class JaxArtifactCallError(ArtifactCallError, jax.errors.JaxRuntimeError,  # type: ignore[misc]  # jaxlib ships no stub for it
                           presents_as=ArtifactCallError):
    """An :class:`ArtifactCallError` from XLA, still catchable as ``jax.errors.JaxRuntimeError``.

    It prints as ``jaxport.errors.ArtifactCallError`` and pickles as that class.
    """


#: Errors that say something about the caller's program, not the artifact: not wrapped.
CALLER_ERRORS: tuple[type[BaseException], ...] = (
    TypeError, FloatingPointError, jax.errors.UnexpectedTracerError,
    jax.errors.JAXIndexError, jax.errors.KeyReuseError)


def call_failure(fun_name: str, cause: Exception) -> ArtifactCallError:
    """The typed error for ``cause``, raised while calling the exported ``fun_name``.

    It is also of the cause's kind where JAX users catch that: a
    ``jax.errors.JaxRuntimeError`` or a ``ValueError``.
    """
    if isinstance(cause, jax.errors.JaxRuntimeError):
        return JaxArtifactCallError(fun_name, cause)
    if isinstance(cause, ValueError):
        return ArtifactCallValueError(fun_name, cause)
    return ArtifactCallError(fun_name, cause)


def bind(target: CallTarget, args_flat: Sequence[Any]) -> list[Any]:
    """Calls ``target`` on flat arguments from any JAX context."""
    return list(jaxport_call_p.bind(*args_flat, target=target))


@functools.lru_cache(maxsize=4096)
def _abstract_eval_cached(target: CallTarget, in_avals: tuple[ShapedArray, ...]) -> tuple[ShapedArray, ...]:
    if len(in_avals) != len(target.in_avals):
        raise ValueError(f"'{target.fun_name}' takes {len(target.in_avals)} flat arguments, "
                         f"got {len(in_avals)}")
    actual = specs_of(in_avals)
    check_arguments(target.in_specs, actual, target.arg_paths)
    if target.in_sharding_records:
        check_shardings_divide([a.shape for a in actual], target.in_sharding_records, target.arg_paths)
    if not target.is_symbolic:
        return target.out_avals
    actual_shapes, foreign = mirror_shapes([tuple(a.shape) for a in in_avals])
    shapes = call_output_shapes([s.shape for s in target.in_specs],
                                [tuple(a.shape) for a in target.out_avals],
                                actual_shapes, target.arg_paths)
    if foreign is not None:
        shapes = tuple(tuple(foreign.back(d) for d in shape) for shape in shapes)
    return tuple(ShapedArray(shape, a.dtype, a.weak_type, memory_space=a.memory_space) if plain
                 else a.update(shape=shape)
                 for a, shape, plain in zip(target.out_avals, shapes, target.out_avals_are_plain))


def abstract_eval(target: CallTarget, in_avals: tuple[ShapedArray, ...]) -> tuple[ShapedArray, ...]:
    """The output avals of calling ``target`` on ``in_avals``, after the call-side checks."""
    return _abstract_eval_cached(target, in_avals)


def _abstract_eval(*in_avals: ShapedArray, target: CallTarget) -> tuple[tuple[ShapedArray, ...], set[Any]]:
    effects = set(target.ordered_effects) | set(target.unordered_effects)
    return _abstract_eval_cached(target, tuple(in_avals)), effects


@functools.lru_cache(maxsize=1024)
def _compiled_impl(target: CallTarget) -> Any:
    return jax.jit(lambda *args: bind(target, args))


def _impl(*args: Any, target: CallTarget) -> Any:
    return _compiled_impl(target)(*args)


jaxport_call_p.def_effectful_abstract_eval(_abstract_eval)
jaxport_call_p.def_impl(_impl)


def _lower(ctx: mlir.LoweringRuleContext, *args: Any, target: CallTarget) -> Sequence[Any]:
    """Lowers a call; a failure that is not already jaxport's names the function."""
    try:
        return _lower_call(ctx, *args, target=target)
    except JaxportError:
        raise
    except Exception as exc:  # only jaxport's and JAX's code runs here: the artifact's fault
        raise call_failure(target.fun_name, exc) from exc


def _lower_call(ctx: mlir.LoweringRuleContext, *args: Any, target: CallTarget) -> Sequence[Any]:
    # Only custom calls need the LAPACK targets; importing them costs ~0.5 s.
    if "cpu" in target.platforms and not _lapack_ready and target.has_custom_calls:
        _initialize_lapack()
    num_devices = jax_internals.lowering_num_devices(ctx)
    if num_devices != target.nr_devices and target.nr_devices != 1:
        raise DeviceCountError(target.fun_name, target.nr_devices, num_devices)
    caller_platforms = tuple(ctx.module_context.platforms)
    branch_of = callee_platform_indices(target.fun_name, target.platforms, caller_platforms,
                                        target.disabled_checks)
    if target.uses_global_constants:
        ctx.module_context.shape_poly_state.uses_dim_vars = True
    submodule = target.parse_module(ctx.module_context.context)
    symbols = ir.SymbolTable(submodule.operation)
    if _has_shardy_mesh(submodule, symbols) and not jax_internals.use_shardy_partitioner():
        raise PartitionerMismatchError()
    callee_type = ir.FunctionType(ir.TypeAttr(symbols["main"].attributes["function_type"]).value)
    name = mlir.merge_mlir_modules(ctx.module_context.module, f"call_exported_{target.fun_name}",
                                   submodule, dst_symtab=ctx.module_context.symbol_table)
    operands: list[Any] = []
    if len(target.platforms) > 1:
        operands.append(_platform_index(ctx, branch_of, callee_type.inputs[0]))
    # The caller's tokens, in the order of the callee's ordered effects.
    operands.extend(ctx.tokens_in.get(effect) for effect in target.ordered_effects)
    constrained = [_constrain(ctx, a, aval, s) for a, aval, s in
                   zip(args, ctx.avals_in, target.in_shardings or (None,) * len(args))]
    kept = [a for i, a in enumerate(constrained) if i in target.kept_var_idx]
    # The callee may take less refined (dynamic) types than the caller passes.
    operands.extend(_convert(a, t) for a, t in zip(kept, callee_type.inputs[len(operands):]))
    call = func_dialect.CallOp(callee_type.results, ir.FlatSymbolRefAttr.get(name), operands)
    nr_tokens = len(target.ordered_effects)
    if nr_tokens:
        ctx.set_tokens_out(mlir.TokenSet(
            {effect: call.results[i] for i, effect in enumerate(target.ordered_effects)}))
    results = [_convert(r, mlir.aval_to_ir_type(ctx.module_context, aval))
               for r, aval in zip(list(call.results)[nr_tokens:], ctx.avals_out)]
    return [_constrain(ctx, r, aval, s) for r, aval, s in
            zip(results, ctx.avals_out, target.out_shardings or (None,) * len(results))]


def _constrain(ctx: mlir.LoweringRuleContext, value: Any, aval: Any, sharding: Any) -> Any:
    """``value`` constrained to a recorded named sharding (unchanged when None)."""
    from jax.sharding import NamedSharding

    if not isinstance(sharding, NamedSharding):
        return value
    return jax_internals.constrain_to_sharding(ctx, value, aval, sharding)


def _convert(value: Any, to_type: Any) -> Any:
    return value if value.type == to_type else hlo.convert(to_type, value)


def _has_shardy_mesh(submodule: Any, symbols: Any) -> bool:
    """Whether the module was partitioned with Shardy: it declares a Shardy mesh."""
    for name in ("mesh", "empty_mesh", "maximal_mesh_0"):
        if name in symbols:
            return bool(symbols[name].operation.name == "sdy.mesh")
    attrs = submodule.operation.attributes
    if "mhlo.frontend_attributes" not in attrs:
        return False
    return "xla.sdy.meshes" in ir.DictAttr(attrs["mhlo.frontend_attributes"])


_lapack_ready = False


def _initialize_lapack() -> None:
    global _lapack_ready
    jax_internals.initialize_cpu_lapack()
    _lapack_ready = True


def _platform_index(ctx: mlir.LoweringRuleContext, branch_of: tuple[int, ...], callee_index_type: Any) -> Any:
    """The callee's platform index, computed from the caller's."""
    i32 = ir.RankedTensorType.get([], ir.IntegerType.get_signless(32))
    if len(branch_of) == 1:
        index = mlir.ir_constant(np.int32(branch_of[0]))
    else:
        current = ctx.dim_var_values[0]
        if current.type != i32:
            current = hlo.convert(i32, current)
        case = hlo.CaseOp([i32], index=current, num_branches=len(branch_of))
        for i, callee_idx in enumerate(branch_of):
            block = case.regions[i].blocks.append()
            with ir.InsertionPoint(block):
                hlo.return_([mlir.ir_constant(np.int32(callee_idx))])
        index = case.result
    if index.type != callee_index_type:
        index = hlo.convert(callee_index_type, index)
    return index


mlir.register_lowering(jaxport_call_p, _lower)


def sequential_batcher(primitive: jex_core.Primitive) -> Callable[..., tuple[list[Any], list[int]]]:
    """A batching rule that maps ``primitive`` over the batch one element at a time."""

    def batch(args: Sequence[Any], dims: Sequence[Any], **params: Any) -> tuple[list[Any], list[int]]:
        batched = [i for i, d in enumerate(dims) if d is not None]  # None: not mapped
        moved = [jax.numpy.moveaxis(args[i], dims[i], 0) for i in batched]

        def one(xs: Sequence[Any]) -> tuple[Any, ...]:
            full = list(args)
            for i, x in zip(batched, xs):
                full[i] = x
            return tuple(primitive.bind(*full, **params))

        outs = lax.map(one, tuple(moved))
        return list(outs), [0] * len(outs)

    return batch


_sequential_call_batcher = sequential_batcher(jaxport_call_p)


def _batch_call(args: Sequence[Any], dims: Sequence[Any], *, target: CallTarget) -> tuple[list[Any], list[int]]:
    """Calls the vectorised export when there is one, else maps one element at a time."""
    batched = tuple(d is not None for d in dims)
    sizes = {args[i].shape[d] for i, d in enumerate(dims) if d is not None}
    static = all(isinstance(dim, int) for a in args for dim in jax.typeof(a).shape)
    if target.batched is None or not static or len(sizes) != 1:
        return _sequential_call_batcher(args, dims, target=target)
    size = sizes.pop()
    moved = [jax.numpy.moveaxis(a, d, 0) if d is not None else a for a, d in zip(args, dims)]
    outs = bind(target.batched(batched, size), moved)
    return outs, [0] * len(outs)


batching.primitive_batchers[jaxport_call_p] = _batch_call
