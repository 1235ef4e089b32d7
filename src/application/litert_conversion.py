"""One function of an artifact or a bundle converted to LiteRT models, every refusal before anything is written.

What the ``litert`` target's converter calls per function: the domain's
plan checks the record (platform, devices, effects, dtypes), then each
variant is built in memory: the StableHLO module with the weights as
constants (:mod:`..adapters.litert_module`, JAX's MLIR), converted to a
``.tflite`` flatbuffer (:mod:`..adapters.litert_convert`, litert-converter),
optionally quantized, its operators checked (no Flex, no custom operator)
and opened once in LiteRT's interpreter (a builtin without a kernel is
refused there). Without ``bindings`` a symbolic function becomes one model
whose symbolic dimensions stay dynamic; with them, one model per binding,
each checked against the function's constraints. Nothing here writes a
file: the caller writes the variants it gets, all or none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..domain.artifact import ArtifactRecord
from ..domain.errors import ConversionError
from ..domain.iree_conversion import StaticShapes, dimension_variables, platform_index, static_shapes
from ..domain.litert_plan import (
    INT8_WEIGHTS, RUNTIME_NAME, check_convertible, check_custom_calls, check_names, check_operators, check_quantize)
from ..domain.runtime_calls import leaf_paths

if TYPE_CHECKING:
    import numpy as np

    from ..adapters.tflite_flatbuffer import FlatbufferInfo


@dataclass(frozen=True)
class LiteRtVariant:
    """One converted model of a function.

    Attributes:
        dims: the binding of the dimension variables it was converted for, sorted
            by name; empty for a static function or a dynamic model.
        dynamic: the dimension variables the model keeps dynamic (``-1`` in its
            shape signatures); empty for static shapes.
        model: the ``.tflite`` flatbuffer (it holds its own copy of the weights).
        info: its operators, signature and constant bytes.
    """

    dims: tuple[tuple[str, int], ...]
    dynamic: tuple[str, ...]
    model: bytes
    info: FlatbufferInfo


def convert_function(name: str, record: ArtifactRecord, *, weights: Sequence[np.ndarray] = (),
                     input_names: Sequence[str], output_names: Sequence[str],
                     bindings: Sequence[Mapping[str, int]] | None = None,
                     quantize: str | None = None) -> list[LiteRtVariant]:
    """The LiteRT models of one function: one dynamic model, or one per binding.

    Args:
        name: the function's name: each model's signature key.
        record: its artifact record (its module verified by the caller).
        weights: the values of its first flat inputs (a bundle's weights, in
            flattening order; PRNG keys as their key data), folded into each model.
        input_names: the wire name of each of the caller's flat inputs (the weights' excluded).
        output_names: the wire name of each flat result.
        bindings: the sizes to convert a symbolic function for
            (``[{"b": 1}, {"b": 8}]``); None to keep its dimensions dynamic.
        quantize: None (float32) or ``"int8-weights"``.

    Raises:
        ConversionError: what LiteRT cannot run, named (see :mod:`jaxport.domain.litert_plan`);
            a binding that violates the function's constraints.
        ValueError: an unknown ``quantize``, or names that do not fit the function.
        MissingExtraError: litert-converter, ai-edge-litert or ai-edge-quantizer is missing.
    """
    check_quantize(quantize)
    nr_weights = len(weights)
    check_names(name, "input", input_names, len(record.in_avals) - nr_weights)
    check_names(name, "output", output_names, len(record.out_avals))
    check_convertible(name, record, nr_weights=nr_weights)
    variables = dimension_variables(record)
    plans: list[StaticShapes | None]
    if variables and not bindings:
        plans = [None]
    else:
        try:
            plans = list(static_shapes(name, record, bindings, nr_weights=nr_weights))
        except ConversionError as exc:
            raise ConversionError(RUNTIME_NAME, name, exc.reason, where=exc.where) from None
    return [_variant(name, record, weights, plan, variables, input_names, output_names, quantize)
            for plan in plans]


def _variant(name: str, record: ArtifactRecord, weights: Sequence[np.ndarray], plan: StaticShapes | None,
             variables: Sequence[str], input_names: Sequence[str], output_names: Sequence[str],
             quantize: str | None) -> LiteRtVariant:
    from ..adapters import litert_convert
    from ..adapters.litert_module import converter_module
    from ..adapters.tflite_flatbuffer import read_flatbuffer
    from .wiring import module_inspector

    portable, calls = converter_module(name, record, weights, plan, platform_index(record), module_inspector())
    check_custom_calls(name, calls)
    dynamic = tuple(variables) if plan is None else ()
    model = litert_convert.to_tflite(name, portable, input_names, output_names, symbolic=dynamic)
    if quantize == INT8_WEIGHTS:
        model = litert_convert.quantize_int8_weights(name, model)
    info = read_flatbuffer(model)
    check_operators(name, info.operators)
    _check_loads(name, model)
    return LiteRtVariant(plan.dims if plan is not None else (), dynamic, model, info)


def _check_loads(name: str, model: bytes) -> None:
    """Refuses a model that LiteRT's interpreter cannot prepare (a builtin without a kernel, for one)."""
    from ..adapters.litert_runtime import LiteRtLoadError, LiteRtModel

    try:
        LiteRtModel(model, xnnpack=False)
    except LiteRtLoadError as exc:
        raise ConversionError(RUNTIME_NAME, name, f"LiteRT's interpreter cannot run the converted model: "
                                                  f"{exc}") from None


def default_names(record: ArtifactRecord, nr_weights: int = 0) -> tuple[list[str], list[str]]:
    """Provisional wire names until the converted-directory format's rule lands: the caller's
    flat inputs' key paths (``args[0]``, ``args[1]['x']``) and ``out[i]`` for each flat result."""
    paths = list(leaf_paths(record.in_tree))[nr_weights:]
    return paths, [f"out[{i}]" for i in range(len(record.out_avals))]
