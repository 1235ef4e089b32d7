"""Calling an exported module from JAX: the ``jaxport_call`` primitive.

The primitive has an abstract evaluation (the call-side checks and the output
avals), an eager implementation (a compiled, cached ``jax.jit`` of itself), a
lowering rule that merges the exported module into the caller's module, and a
batching rule (the export vmapped, for an export made in this process; else a
sequential map over the batch). Before it is bound, every call checks its
pytree (:func:`flat_arguments`). Its parameter, a :class:`CallTarget`, holds
the export's JAX objects (:class:`~jaxport.adapters.jax.exported.jax_objects.JaxObjects`),
not copied, and what the primitive derives from them.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np
from jax import lax
from jax.core import ShapedArray
from jax.interpreters import batching, mlir
from jax.sharding import NamedSharding
from jaxlib.mlir import ir  # jax.extend.mlir's modules re-export these (importing it costs a first call)
from jaxlib.mlir.dialects import func as func_dialect
from jaxlib.mlir.dialects import stablehlo as hlo

from jaxport.domain.artifact.sharding import NamedShardingRecord, check_shardings_divide
from jaxport.domain.calls.front import check_arguments
from jaxport.domain.errors import (
    ArtifactCallError, ArtifactCallValueError, DeviceCountError, DtypeMismatchError, JaxportError,
    NonStringKeyError, PartitionerMismatchError, TreeMismatchError
)
from jaxport.domain.artifact.platforms import callee_platform_indices
from jaxport.domain.specs import ArraySpec
from jaxport.domain.symbolic import call_output_shapes
from jaxport.adapters.jax import internals as jax_internals
from jaxport.adapters.mlir.callee import CalleeModule
from jaxport.adapters.jax.lowering.foreign_dims import mirror_shapes
from jaxport.adapters.mlir.dimension_args import standard_form
from jaxport.adapters.jax.exported.jax_objects import JaxObjects
from jaxport.adapters.jax.lowering.avals import leaf_paths, specs_of, tree_differences
from jaxport.adapters.jax.trees.plain import with_plain_library_nodes
from jaxport.adapters.jax.records import sharding_record


class CallTarget:
    """The primitive's parameter: one export, hashed by identity, and what the primitive derives from it.

    It reads the export's JAX objects (module bytes, avals, shardings,
    effects...) and keeps, once per export, what the call-side checks and the
    lowering compute from them. It appears in jaxprs: its ``repr`` is short.

    Args:
        objects: the export, in JAX's terms.
        vjp: makes the target of the exported VJP; None when the export carries none.
        vjp_of_arity: for the exported VJP of a function with that many flat
            inputs: the function is ``(x, ct) -> J(x)^T ct``, which forward mode exploits.
        batched: the target of the function vmapped over axis 0 of the flat
            arguments marked True, for a batch size; None when only a
            sequential map is possible.
    """

    def __init__(self, objects: JaxObjects, *, vjp: Callable[[], CallTarget] | None = None,
                 vjp_of_arity: int | None = None,
                 batched: Callable[[tuple[bool, ...], int], CallTarget] | None = None) -> None:
        self.objects = objects
        self._vjp = vjp
        self.vjp_of_arity = vjp_of_arity
        self.batched = batched

    def __repr__(self) -> str:
        return f"<exported {self.fun_name}>"

    @property
    def fun_name(self) -> str:
        """The exported function's name, for messages."""
        return self.objects.fun_name

    def vjp(self) -> CallTarget | None:
        """The target of the exported VJP, or None when the export carries none."""
        return None if self._vjp is None else self._vjp()

    @functools.cached_property
    def callee(self) -> CalleeModule:
        """The module, parsed into a caller's context by ``callee.module_in(context)``.

        See :mod:`jaxport.adapters.mlir.callee`: the artifact is deserialized
        at most twice per target; later lowerings, whatever the call site or
        shapes, parse plain MLIR bytecode. (The module an
        in-process export still holds is not used: the portable round trip
        is what makes it refinable by the caller, as a loaded artifact is.)
        """
        objects = self.objects

        def standard(module: Any) -> Any | None:
            return standard_form(module, tuple(tuple(a.shape) for a in objects.in_avals),
                                 self.arg_paths, nr_tokens=len(objects.ordered_effects),
                                 kept_var_idx=objects.module_kept_var_idx)

        return CalleeModule(lambda: objects.mlir_module_serialized, standard if self.is_symbolic else None,
                            polymorphic=self.is_symbolic)

    @functools.cached_property
    def in_specs(self) -> tuple[ArraySpec, ...]:
        """The domain specs of the exported inputs, for the call-side checks."""
        return specs_of(self.objects.in_avals)

    @functools.cached_property
    def arg_paths(self) -> tuple[str, ...]:
        """How each flat argument is named in messages (``args[0]['w']``)."""
        return leaf_paths(self.objects.in_tree, self.objects.in_avals)

    @functools.cached_property
    def in_sharding_records(self) -> tuple[NamedShardingRecord | None, ...]:
        """The recorded named input shardings (None elsewhere), or () when there is none."""
        records = (sharding_record(s) if isinstance(s, NamedSharding) else None for s in self.objects.in_shardings)
        named = tuple(r if isinstance(r, NamedShardingRecord) else None for r in records)
        return named if any(s is not None for s in named) else ()

    @functools.cached_property
    def effects(self) -> frozenset[Any]:
        """The effects of a call: the ordered and the unordered ones."""
        return frozenset(self.objects.ordered_effects) | frozenset(self.objects.unordered_effects)

    @functools.cached_property
    def calls_lapack(self) -> bool:
        """Whether the module may call JAX's CPU LAPACK targets (all named ``lapack_*``; the bytecode
        keeps a custom call's target name as it is). A location that holds the word (a file
        ``test_lapack_x.py``) makes it True too: that costs only the registration."""
        return b"lapack_" in self.objects.mlir_module_serialized

    @functools.cached_property
    def out_avals_are_plain(self) -> tuple[bool, ...]:
        """For each output, whether its aval is the one its shape and dtype alone make.

        Such an aval (no sharding, no manual axes) is made anew for a call's
        shape without ``update``'s sharding checks, which have nothing to check.
        """
        return tuple(ShapedArray(a.shape, a.dtype, a.weak_type, memory_space=a.memory_space) is a
                     for a in self.objects.out_avals)

    @functools.cached_property
    def is_symbolic(self) -> bool:
        """Whether some input dimension is symbolic (outputs are then solved per call)."""
        return any(s.is_symbolic for s in self.in_specs)

    @functools.cached_property
    def has_high_types(self) -> bool:
        """Whether an input or output is of a high type (an unreduced-sharded array, JAX 0.12.1),
        whose lowered type, the one ``main`` takes or gives, has one more leading dimension per
        unreduced mesh axis."""
        return any(jax_internals.is_high(a) for a in self.objects.in_avals + self.objects.out_avals)

    @functools.cached_property
    def low(self) -> CallTarget:
        """This target with each high type lowered, and its sharding's spec with it: the types of
        ``main`` (itself when none is high)."""
        if not self.has_high_types:
            return self
        objects = self.objects
        in_avals, in_shardings = _low_types(objects.in_avals, objects.in_shardings)
        out_avals, out_shardings = _low_types(objects.out_avals, objects.out_shardings)
        low = dataclasses.replace(objects, in_avals=in_avals, in_shardings=in_shardings,
                                  out_avals=out_avals, out_shardings=out_shardings)
        return CallTarget(low, vjp=self._vjp, vjp_of_arity=self.vjp_of_arity)


def _low_types(avals: tuple[ShapedArray, ...], shardings: tuple[Any, ...]
               ) -> tuple[tuple[ShapedArray, ...], tuple[Any, ...]]:
    """Each aval lowered, and a named sharding of a high one with the lowered spec."""
    low_avals = tuple(jax_internals.low_type(a) for a in avals)
    low_shardings = tuple(s.update(spec=low.sharding.spec) if low is not a and isinstance(s, NamedSharding) else s
                          for a, low, s in zip(avals, low_avals, shardings))
    return low_avals, low_shardings


jaxport_call_p = jax_internals.Primitive("jaxport_call")
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


def flat_arguments(fun_name: str, exported_tree: jax.tree_util.PyTreeDef, args: Any, kwargs: Any) -> list[Any]:
    """The flat leaves of ``(args, kwargs)`` if their tree is ``exported_tree``: the tree check of every call.

    Flax and Equinox objects match their plain containers (``trees/plain.py``),
    which keep their leaves' order: a loaded artifact takes the objects that
    were exported, an in-process export takes their plain form. (The
    primitive checks ranks, shapes and dimension variables.)

    Raises:
        TreeMismatchError: listing each structural difference by path.
    """
    args_flat, in_tree = jax.tree_util.tree_flatten((args, kwargs))
    if in_tree != exported_tree and not _same_plain_structure(in_tree, exported_tree):
        raise TreeMismatchError(fun_name, tree_differences(in_tree, exported_tree))
    return args_flat


def _same_plain_structure(a: jax.tree_util.PyTreeDef, b: jax.tree_util.PyTreeDef) -> bool:
    try:
        return bool(with_plain_library_nodes(a) == with_plain_library_nodes(b))
    except NonStringKeyError:
        return False


def check_dtypes(target: CallTarget, leaves: Sequence[Any]) -> None:
    """Raises DtypeMismatchError for the first leaf with a dtype other than the exported one
    (what explains a ``TypeError`` that ``jax.jit`` raised before the tree check ran)."""
    for path, spec, leaf in zip(target.arg_paths, target.in_specs, leaves):
        dtype = getattr(leaf, "dtype", None)
        if dtype is not None and str(dtype) != spec.dtype:
            raise DtypeMismatchError(path, spec.dtype, str(dtype))


def bind(target: CallTarget, args_flat: Sequence[Any]) -> list[Any]:
    """Calls ``target`` on flat arguments from any JAX context."""
    return list(jaxport_call_p.bind(*args_flat, target=target))


@functools.lru_cache(maxsize=4096)
def abstract_eval(target: CallTarget, in_avals: tuple[ShapedArray, ...]) -> tuple[ShapedArray, ...]:
    """The output avals of calling ``target`` on ``in_avals``, after the call-side checks."""
    objects = target.objects
    if len(in_avals) != len(objects.in_avals):
        raise ValueError(f"'{target.fun_name}' takes {len(objects.in_avals)} flat arguments, "
                         f"got {len(in_avals)}")
    actual = specs_of(in_avals)
    check_arguments(target.in_specs, actual, target.arg_paths)
    if target.in_sharding_records:
        check_shardings_divide([a.shape for a in actual], target.in_sharding_records, target.arg_paths)
    if not target.is_symbolic:
        return objects.out_avals
    actual_shapes, foreign = mirror_shapes([tuple(a.shape) for a in in_avals])
    shapes = call_output_shapes([s.shape for s in target.in_specs],
                                [tuple(a.shape) for a in objects.out_avals],
                                actual_shapes, target.arg_paths)
    if foreign is not None:
        shapes = tuple(tuple(foreign.back(d) for d in shape) for shape in shapes)
    return tuple(ShapedArray(shape, a.dtype, a.weak_type, memory_space=a.memory_space) if plain
                 else a.update(shape=shape)
                 for a, shape, plain in zip(objects.out_avals, shapes, target.out_avals_are_plain))


def _abstract_eval(*in_avals: ShapedArray, target: CallTarget) -> tuple[tuple[ShapedArray, ...], set[Any]]:
    return abstract_eval(target, tuple(in_avals)), set(target.effects)


@functools.lru_cache(maxsize=1024)
def _compiled_impl(target: CallTarget) -> Any:
    return jax.jit(lambda *args: bind(target, args))


jaxport_call_p.def_effectful_abstract_eval(_abstract_eval)
jaxport_call_p.def_impl(lambda *args, target: _compiled_impl(target)(*args))


def _to_low(*args: Any, target: CallTarget) -> list[Any]:
    """A call on values of high types, as the call of ``main``'s lowered types (as jax.export 0.12.1)."""
    in_avals = tuple(jax.typeof(x) for x in args)
    out_avals = abstract_eval(target, in_avals)  # the call-side checks, on the types the caller sees
    low_args = [low for a, x in zip(in_avals, args) for low in jax_internals.lower_value(a, x)]
    return [jax_internals.raise_value(a, y) for a, y in zip(out_avals, bind(target.low, low_args))]


jax_internals.define_high_rules(jaxport_call_p, lambda *avals, target: target.has_high_types, _to_low)


def _lower(ctx: mlir.LoweringRuleContext, *args: Any, target: CallTarget) -> Sequence[Any]:
    """Lowers a call; a failure that is not already jaxport's names the function."""
    try:
        return _lower_call(ctx, *args, target=target)
    except JaxportError:
        raise
    except Exception as exc:  # only jaxport's and JAX's code runs here: the artifact's fault
        raise call_failure(target.fun_name, exc) from exc


def _lower_call(ctx: mlir.LoweringRuleContext, *args: Any, target: CallTarget) -> Sequence[Any]:
    objects = target.objects
    # Registering the LAPACK targets imports SciPy's linalg (about 0.2 s of a fresh process), which
    # jax.export does for every call on the CPU; only a module that calls them needs it. Once SciPy's
    # LAPACK is imported (by anyone), registering costs microseconds, less than looking for the names.
    if "cpu" in objects.platforms and not _lapack_ready and (_SCIPY_LAPACK in sys.modules or target.calls_lapack):
        _initialize_lapack()
    num_devices = jax_internals.lowering_num_devices(ctx)
    if num_devices != objects.nr_devices and objects.nr_devices != 1:
        raise DeviceCountError(target.fun_name, objects.nr_devices, num_devices)
    caller_platforms = tuple(ctx.module_context.platforms)
    branch_of = callee_platform_indices(target.fun_name, objects.platforms, caller_platforms,
                                        objects.disabled_safety_checks)
    if objects.uses_global_constants:
        ctx.module_context.shape_poly_state.uses_dim_vars = True
    submodule = target.callee.module_in(ctx.module_context.context)
    symbols = ir.SymbolTable(submodule.operation)
    if _has_shardy_mesh(submodule, symbols) and not jax_internals.use_shardy_partitioner():
        raise PartitionerMismatchError()
    callee_type = ir.FunctionType(ir.TypeAttr(symbols["main"].attributes["function_type"]).value)
    name = mlir.merge_mlir_modules(ctx.module_context.module, f"call_exported_{target.fun_name}",
                                   submodule, dst_symtab=ctx.module_context.symbol_table)
    operands: list[Any] = []
    if len(objects.platforms) > 1:
        operands.append(_platform_index(ctx, branch_of, callee_type.inputs[0]))
    # The caller's tokens, in the order of the callee's ordered effects.
    ordered_effects = objects.ordered_effects
    operands.extend(ctx.tokens_in.get(effect) for effect in ordered_effects)
    constrained = [_constrain(ctx, a, aval, s) for a, aval, s in
                   zip(args, ctx.avals_in, objects.in_shardings)]
    kept = [a for i, a in enumerate(constrained) if i in objects.module_kept_var_idx]
    # The callee may take less refined (dynamic) types than the caller passes.
    operands.extend(_convert(a, t) for a, t in zip(kept, callee_type.inputs[len(operands):]))
    call = func_dialect.CallOp(callee_type.results, ir.FlatSymbolRefAttr.get(name), operands)
    nr_tokens = len(ordered_effects)
    if nr_tokens:
        ctx.set_tokens_out(mlir.TokenSet(
            {effect: call.results[i] for i, effect in enumerate(ordered_effects)}))
    results = [_convert(r, mlir.aval_to_ir_type(ctx.module_context, aval))
               for r, aval in zip(list(call.results)[nr_tokens:], ctx.avals_out)]
    return [_constrain(ctx, r, aval, s) for r, aval, s in
            zip(results, ctx.avals_out, objects.out_shardings)]


def _constrain(ctx: mlir.LoweringRuleContext, value: Any, aval: Any, sharding: Any) -> Any:
    """``value`` constrained to a recorded named sharding (unchanged when None)."""
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
#: What registering the LAPACK targets imports (jaxlib's LAPACK takes its routines from SciPy's).
_SCIPY_LAPACK = "scipy.linalg.cython_lapack"


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


def sequential_batcher(primitive: jax_internals.Primitive) -> Callable[..., tuple[list[Any], list[int]]]:
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
