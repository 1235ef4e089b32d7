"""An exported module specialised to static shapes and to its CPU branch, as XLA's path makes it.

An ahead-of-time compiler gets a module whose ``main`` takes every flat
input of the function (its weights first, for a bundle's function), with
static types, and returns static results: the artifact's module becomes a
private callee of a new ``main`` that passes it the CPU platform index as a
constant (for a multi-platform module) and the inputs it keeps. JAX's own
refinement pass then propagates the constants and the shapes into the
callee (so the other platforms' branches fold away and symbolic shapes
become static) and checks the module's shape assertions for these shapes;
inlining leaves one function. The result is a StableHLO portable artifact.

The scaffolding (:func:`calling_main`, :func:`portable`) serves LiteRT's
module too (:mod:`jaxport.adapters.litert.module`), which passes the weights
as constants instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np
from jax.extend import mlir as jex_mlir
from jax.extend.mlir import ir, passmanager
from jax.extend.mlir.dialects import func as func_dialect
from jax.interpreters import mlir

from jaxport.domain.artifact.record import DType
from jaxport.domain.converted.static_shapes import StaticShapes
from jaxport.domain.artifact.module_format import STABLEHLO_TARGET_VERSION
from jaxport.adapters.jax import internals as jax_internals
from jaxport.adapters.jax.records import jax_dtype
from .bindings import operations
from .module import read_module
from .unfold import unfold, unfold_float64_functions
from .wrap import converted

_CALLEE = "jaxport_exported_main"


def specialize(module: bytes, in_dtypes: Sequence[DType], out_dtypes: Sequence[DType],
               kept_var_idx: Sequence[int], shapes: StaticShapes, platform_index: int | None, *,
               refine: bool) -> bytes:
    """The portable artifact of an exported module for ``shapes``, taking every flat input.

    Runs in the verifying process (:mod:`.rewrite`), on a module it has verified.

    Args:
        module: the function's module (a portable artifact).
        in_dtypes: the dtype of each flat input of the function (its weights included).
        out_dtypes: the dtype of each flat output.
        kept_var_idx: the flat inputs that the module's ``main`` takes.
        shapes: the static shapes of every flat input and output.
        platform_index: the index of the branch to keep in a multi-platform
            module's ``main``; None for a single-platform module.
        refine: whether ``main`` needs shape refinement (the record's ``uses_global_constants``).

    Raises:
        ValueError: JAX's refinement refused the module for these shapes.
    """
    def plan(callee: ir.Module, callee_type: ir.FunctionType) -> MainPlan:
        def operands(arguments: Sequence[Any]) -> list[Any]:
            platform = [] if platform_index is None else [mlir.ir_constant(np.int32(platform_index))]
            return platform + [arguments[i] for i in kept_var_idx]

        return _types(in_dtypes, shapes.in_shapes), _types(out_dtypes, shapes.out_shapes), operands

    return portable(calling_main(module, _CALLEE, plan), refine=refine or platform_index is not None)


#: What :func:`calling_main` asks of its caller: the new ``main``'s input and result types, and a
#: function of its arguments that gives the operands of the call.
MainPlan = tuple[list[ir.Type], list[ir.Type], Callable[[Sequence[Any]], list[Any]]]


def calling_main(module: bytes, callee_name: str,
                 plan: Callable[[ir.Module, ir.FunctionType], MainPlan]) -> ir.Module:
    """A new module whose public ``main`` calls ``module``'s, merged in as the private ``callee_name``.

    ``plan`` gets the deserialized module and its ``main``'s type, before the
    merge, and gives the new ``main``'s types and its call's operands; each
    operand and result is converted to the type the other side takes.
    """
    context = mlir.make_ir_context()
    callee = read_module(module, context)
    with context, ir.Location.unknown():
        callee_type = ir.FunctionType(ir.TypeAttr(
            ir.SymbolTable(callee.operation)["main"].attributes["function_type"]).value)
        in_types, out_types, operands = plan(callee, callee_type)
        wrapper = ir.Module.create()
        name = mlir.merge_mlir_modules(wrapper, callee_name, callee)
        main: Any = func_dialect.FuncOp("main", ir.FunctionType.get(in_types, out_types))
        main.attributes["sym_visibility"] = ir.StringAttr.get("public")
        wrapper.body.append(main)
        block = main.add_entry_block()
        with ir.InsertionPoint(block):
            given = [converted(a, t) for a, t in zip(operands(block.arguments), callee_type.inputs)]
            call = func_dialect.CallOp(list(callee_type.results), ir.FlatSymbolRefAttr.get(name), given)
            func_dialect.ReturnOp([converted(r, t) for r, t in zip(call.results, out_types)])
    return wrapper


def portable(module: ir.Module, *, refine: bool, erase_custom_calls: frozenset[str] = frozenset(),
             float64: bool = True) -> bytes:
    """The portable artifact of a module that :func:`calling_main` made: refined by JAX (when
    ``refine``), its custom calls to ``erase_custom_calls`` erased, inlined into one function,
    without single-device shardings, its newer operations and JAX's elementwise kernels unfolded
    (:mod:`.unfold`: written for StableHLO 1.15, which neither IREE's nor LiteRT's reads otherwise;
    ``float64``: whether the runtime computes in float64, else :func:`.unfold.unfold_float64_functions`).

    Raises:
        ValueError: JAX's refinement refused the module.
        ir.MLIRError: a pass failed on the module.
    """
    if not float64:
        unfold_float64_functions(module)  # before the refinement, which inlines them
    if refine:
        with module.context, ir.Location.unknown():
            module = jax_internals.refine_polymorphic_shapes(module)  # in a context of its own
    with module.context, ir.Location.unknown():
        if erase_custom_calls:
            _erase_custom_calls(module, erase_custom_calls)
        unfold(module)
        passmanager.PassManager.parse("builtin.module(inline,canonicalize,symbol-dce)").run(module.operation)
        _drop_single_device_shardings(module)
        return bytes(jex_mlir.serialize_portable_artifact(module, STABLEHLO_TARGET_VERSION,
                                                          jax_internals.backend_serializes_with_sdy()))


def _erase_custom_calls(module: ir.Module, targets: frozenset[str]) -> None:
    """Erases the custom calls to ``targets``."""
    for op in operations(module):
        if op.name == "stablehlo.custom_call" and ir.StringAttr(op.attributes["call_target_name"]).value in targets:
            op.erase()


def _drop_single_device_shardings(module: ir.Module) -> None:
    """Removes Shardy's annotations, which mean nothing on one device and which IREE does not parse:
    meshes, sharding constraints (each replaced by its operand) and ``sdy.*`` attributes."""
    erase: list[ir.Operation] = []
    for op in operations(module):
        if op.name == "sdy.sharding_constraint":
            op.results[0].replace_all_uses_with(op.operands[0])
            erase.append(op)
        elif op.name == "sdy.mesh":
            erase.append(op)
        for name in [n for n in op.attributes if n.startswith("sdy.")]:
            del op.attributes[name]
        for list_name in ("arg_attrs", "res_attrs"):
            if list_name in op.attributes:
                op.attributes[list_name] = ir.ArrayAttr.get([
                    ir.DictAttr.get({a.name: a.attr for a in _named_attributes(d) if not a.name.startswith("sdy.")})
                    for d in ir.ArrayAttr(op.attributes[list_name])])
    for op in erase:
        op.erase()


def _named_attributes(attr: ir.Attribute) -> list[Any]:
    """The entries of a dictionary attribute."""
    entries: Any = ir.DictAttr(attr)
    return list(entries)


def _types(dtypes: Sequence[DType], shapes: Sequence[tuple[int, ...]]) -> list[ir.Type]:
    """The static tensor types of arrays (a PRNG key array as its key data, as JAX lowers it)."""
    types: list[ir.Type] = []
    for dtype, shape in zip(dtypes, shapes, strict=True):
        data = jax.ShapeDtypeStruct(shape, jax_dtype(dtype))
        if jax.numpy.issubdtype(data.dtype, jax.dtypes.prng_key):
            data = jax.eval_shape(jax.random.key_data, data)
        types.append(ir.RankedTensorType.get(data.shape, mlir.dtype_to_ir_type(np.dtype(data.dtype))))
    return types
