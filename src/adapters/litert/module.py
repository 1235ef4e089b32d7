"""The StableHLO module that LiteRT's converter gets: the caller's inputs only, the weights as constants.

LiteRT's converter fuses a ``dot_general`` into its FULLY_CONNECTED kernel
only when the weights are constants (weights passed as arguments stay
runtime inputs, with BATCH_MATMUL), so a new ``main`` takes the caller's
flat inputs only and passes the artifact's ``main`` each weight as a
``stablehlo.constant`` (and the CPU branch's platform index, for a
multi-platform module): each model then holds its own copy of the weights.
For static shapes the new ``main`` takes static types and JAX's shape
refinement propagates them (as :mod:`jaxport.adapters.mlir.specialize` does for IREE); with
dynamic shapes the symbolic dimensions are left as ``?``. A ``main`` that
takes dimension values as leading ``tensor<i32> {jax.global_constant = "b"}``
arguments (as JAX 0.11 and later write it) gets each as a constant of the
binding (static) or from ``stablehlo.get_dimension_size`` of an input that
has the variable alone as a dimension (dynamic). JAX's ``shape_assertion`` custom calls are erased (jaxport checks
every call in front of the runtime); StableHLO's newest operations and JAX's lgamma and digamma are unfolded
(:mod:`jaxport.adapters.mlir.unfold`; the plan refused them on float64, which LiteRT has no arithmetic for). The result is a StableHLO portable
artifact at a version the converter reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from jax.extend.mlir import ir
from jax.extend.mlir.dialects import stablehlo as hlo
from jax.interpreters import mlir

from jaxport.domain.artifact.calling_convention import PLATFORM_INDEX
from jaxport.domain.artifact.record import ArtifactRecord, AvalRecord
from jaxport.domain.errors import ConversionError
from jaxport.domain.converted.static_shapes import StaticShapes
from jaxport.domain.targets.litert import ERASED_CUSTOM_CALLS, RUNTIME_NAME
from jaxport.domain.calls.front import record_shapes
from jaxport.domain.symbolic import DimExpr
from jaxport.adapters.jax.records import jax_dtype
from jaxport.adapters.mlir.dimension_args import global_constant_arguments
from jaxport.adapters.mlir.specialize import MainPlan, calling_main, portable

_CALLEE = "jaxport_litert_callee"


def converter_module(name: str, record: ArtifactRecord, weights: Sequence[np.ndarray],
                     shapes: StaticShapes | None, platform_index: int | None) -> bytes:
    """The portable artifact for LiteRT's converter.

    Args:
        name: the function's name, for messages.
        record: the function (its module, avals, kept inputs, platforms).
        weights: the values of its first flat inputs (a bundle's weights, PRNG
            keys as their key data), folded in as constants.
        shapes: the static shapes to specialize for; None to keep the symbolic
            dimensions dynamic.
        platform_index: the CPU branch's index in a multi-platform ``main``; None
            for a single-platform module.

    Raises:
        ConversionError: JAX's refinement refused the binding, a dimension
            value that ``main`` takes cannot be read from any input's shape, or
            the module built is invalid (a bug of jaxport's).
    """
    nr_weights = len(weights)

    def plan(callee: ir.Module, callee_type: ir.FunctionType) -> MainPlan:
        leading = global_constant_arguments(callee)
        out_types = list(callee_type.results) if shapes is None else _static_types(record.out_avals, shapes.out_shapes)

        def operands(arguments: Sequence[Any]) -> list[Any]:
            given: list[Any] = []
            if platform_index is not None and PLATFORM_INDEX not in leading:
                given.append(mlir.ir_constant(np.int32(platform_index)))
            for variable in leading:
                if variable == PLATFORM_INDEX:
                    given.append(mlir.ir_constant(np.int32(platform_index or 0)))
                elif shapes is None:
                    given.append(_dimension_value(name, record, variable, arguments, nr_weights))
                else:
                    given.append(mlir.ir_constant(np.int32(dict(shapes.dims)[variable])))
            for i in record.module_kept_var_idx:
                given.append(_constant(weights[i]) if i < nr_weights else arguments[i - nr_weights])
            return given

        return _caller_types(record, shapes, nr_weights), out_types, operands

    module = calling_main(record.mlir_module_serialized, _CALLEE, plan)
    try:
        return portable(module, refine=shapes is not None, erase_custom_calls=ERASED_CUSTOM_CALLS, float64=False)
    except ir.MLIRError as exc:  # the module built above is wrong: a bug here, told as such
        raise ConversionError(RUNTIME_NAME, name, f"jaxport built an invalid module for LiteRT (please "
                                                  f"report it): {exc}") from exc
    except ValueError as exc:  # JAX's refinement, which runs only for static shapes
        if shapes is None:
            raise
        raise ConversionError(RUNTIME_NAME, name, f"JAX's shape refinement refused it for "
                                                  f"{dict(shapes.dims)}: {exc}") from exc


def _caller_types(record: ArtifactRecord, shapes: StaticShapes | None, nr_weights: int) -> list[ir.Type]:
    """The tensor types of the caller's flat inputs: static for ``shapes``, else ``?`` for each symbolic dimension."""
    avals = record.in_avals[nr_weights:]
    if shapes is not None:
        return _static_types(avals, shapes.in_shapes[nr_weights:])
    dynamic = ir.ShapedType.get_dynamic_size()
    sizes = [[dynamic if isinstance(d, DimExpr) else int(d) for d in s]
             for s in record_shapes(record.in_avals, record.constraints)[nr_weights:]]
    return [ir.RankedTensorType.get(size, _element_type(aval)) for size, aval in zip(sizes, avals, strict=True)]


def _static_types(avals: Sequence[AvalRecord], shapes: Sequence[tuple[int, ...]]) -> list[ir.Type]:
    return [ir.RankedTensorType.get(shape, _element_type(aval)) for shape, aval in zip(shapes, avals, strict=True)]


def _element_type(aval: AvalRecord) -> ir.Type:
    return mlir.dtype_to_ir_type(np.dtype(jax_dtype(aval.dtype)))


def _dimension_value(name: str, record: ArtifactRecord, variable: str, arguments: Any, nr_weights: int) -> Any:
    """``variable``'s value as a ``tensor<i32>``, read from the first caller's input that has it as a dimension."""
    shapes = record_shapes(record.in_avals, record.constraints)
    for i, shape in enumerate(shapes[nr_weights:]):
        for axis, d in enumerate(shape):
            if isinstance(d, DimExpr) and str(d) == variable:
                return hlo.get_dimension_size(arguments[i], axis)
    raise ConversionError(RUNTIME_NAME, name, f"its module takes the dimension variable {variable} as a value, "
                                              "and no input has it alone as a dimension to read it from: give "
                                              "the sizes to convert for (dims)")


def _constant(value: np.ndarray) -> Any:
    return mlir.ir_constant(np.asarray(value, order="C"))  # np.ascontiguousarray makes a scalar rank 1
