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
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from jax.extend import mlir as jex_mlir
from jax.extend.mlir import ir, passmanager
from jax.extend.mlir.dialects import func as func_dialect
from jax.extend.mlir.dialects import stablehlo as hlo
from jax.interpreters import mlir

from jaxport.domain.artifact.record import ArtifactRecord, AvalRecord
from jaxport.domain.converted.static_shapes import StaticShapes
from jaxport.domain.artifact.module_format import STABLEHLO_TARGET_VERSION
from jaxport.domain.ports import ModuleInspector
from jaxport.adapters.jax import internals as jax_internals
from jaxport.adapters.jax.records import jax_dtype
from .module import StableHloSerializer

_CALLEE = "jaxport_exported_main"


def specialize(record: ArtifactRecord, shapes: StaticShapes, platform_index: int | None,
               inspector: ModuleInspector | None = None) -> tuple[bytes, list[tuple[str, str]]]:
    """The portable artifact of ``record``'s module for ``shapes``, taking every flat input,
    and the target and text (with its location) of each custom call it makes.

    Args:
        record: the function (its module, kept inputs, platforms).
        shapes: the static shapes of every flat input and output.
        platform_index: the index of the branch to keep in a multi-platform
            module's ``main``; None for a single-platform module.
        inspector: finds the custom calls of the specialised module (None: none are looked for;
            the conversion pipeline has its custom calls from the verifying child's walk).

    Raises:
        ValueError: JAX's refinement refused the module for these shapes.
    """
    context = mlir.make_ir_context()
    callee = StableHloSerializer.deserialize(record.mlir_module_serialized, context)
    with context, ir.Location.unknown():
        callee_type = ir.FunctionType(ir.TypeAttr(
            ir.SymbolTable(callee.operation)["main"].attributes["function_type"]).value)
        module = ir.Module.create()
        name = mlir.merge_mlir_modules(module, _CALLEE, callee)
        in_types = _types(record.in_avals, shapes.in_shapes)
        out_types = _types(record.out_avals, shapes.out_shapes)
        main: Any = func_dialect.FuncOp("main", ir.FunctionType.get(in_types, out_types))
        main.attributes["sym_visibility"] = ir.StringAttr.get("public")
        module.body.append(main)
        block = main.add_entry_block()
        with ir.InsertionPoint(block):
            operands = [] if platform_index is None else [mlir.ir_constant(np.int32(platform_index))]
            kept = [block.arguments[i] for i in record.module_kept_var_idx]
            operands += [_convert(a, t) for a, t in zip(kept, callee_type.inputs[len(operands):])]
            call = func_dialect.CallOp(callee_type.results, ir.FlatSymbolRefAttr.get(name), operands)
            func_dialect.ReturnOp([_convert(r, t) for r, t in zip(call.results, out_types)])
        if record.uses_global_constants or platform_index is not None:
            module = jax_internals.refine_polymorphic_shapes(module)
    with module.context:
        passmanager.PassManager.parse("builtin.module(inline,canonicalize,symbol-dce)").run(module.operation)
        _drop_single_device_shardings(module)
        calls = [] if inspector is None else \
            [(site.target or "", _clipped(site.describe())) for site in inspector.sites(module)]
        portable = bytes(jex_mlir.serialize_portable_artifact(module, STABLEHLO_TARGET_VERSION,
                                                              jax_internals.backend_serializes_with_sdy()))
    return portable, calls


def _clipped(text: str) -> str:
    """A long operation's text cut in the middle (its start names it, its end gives its location)."""
    return text if len(text) <= 400 else f"{text[:250]} ... {text[-120:]}"


def _drop_single_device_shardings(module: ir.Module) -> None:
    """Removes Shardy's annotations, which mean nothing on one device and which IREE does not parse:
    meshes, sharding constraints (each replaced by its operand) and ``sdy.*`` attributes."""
    erase: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
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
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    for op in erase:
        op.erase()


def _named_attributes(attr: ir.Attribute) -> list[Any]:
    """The entries of a dictionary attribute."""
    entries: Any = ir.DictAttr(attr)
    return list(entries)


def _types(avals: Sequence[AvalRecord], shapes: Sequence[tuple[int, ...]]) -> list[ir.Type]:
    """The static tensor types of ``avals`` (a PRNG key array as its key data, as JAX lowers it)."""
    types: list[ir.Type] = []
    for aval, shape in zip(avals, shapes, strict=True):
        data = jax.ShapeDtypeStruct(shape, jax_dtype(aval.dtype))
        if jax.numpy.issubdtype(data.dtype, jax.dtypes.prng_key):
            data = jax.eval_shape(jax.random.key_data, data)
        types.append(ir.RankedTensorType.get(data.shape, mlir.dtype_to_ir_type(np.dtype(data.dtype))))
    return types


def _convert(value: Any, to_type: ir.Type) -> Any:
    return value if value.type == to_type else hlo.convert(to_type, value)
