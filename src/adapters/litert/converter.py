"""The LiteRT target's converter: each function to ``.tflite`` models, every refusal before anything is written.

The plan's refusals and the bindings were checked by the pipeline
(:data:`jaxport.domain.targets.litert.PLAN`); what is refused here is what
only LiteRT's tools decide. Per function, each variant is built in memory:
the StableHLO module with the weights as constants
(:mod:`jaxport.adapters.litert.module`, JAX's MLIR), converted to a
``.tflite`` flatbuffer (:mod:`jaxport.adapters.litert.stablehlo_to_tflite`,
litert-converter), optionally quantized, its operators checked (no Flex, no
custom operator: :func:`jaxport.domain.targets.litert.check_operators`) and
opened once in LiteRT's interpreter (a builtin without a kernel is refused
there). Without bindings a symbolic function becomes one model whose
symbolic dimensions stay dynamic; with them, one model per binding (the
static shapes the pipeline checked against the function's constraints).
Files are written only once every function of the job has converted (:func:`convert`, the target's
:class:`~jaxport.domain.targets.ports.Converter`), each model holding its
own copy of the weights; a generative bundle's models become the signatures of one
model, :data:`~jaxport.domain.targets.litert.SHARED_FILE`, the weights stored once
(:mod:`jaxport.adapters.litert.shared_model`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from jaxport.domain.artifact.record import ArtifactRecord
from jaxport.domain.converted.manifest import Variant
from jaxport.domain.converted.quantization import FLOAT16
from jaxport.domain.errors import ConversionError, MissingExtraError
from jaxport.domain.calls.front import dimension_variables
from jaxport.domain.converted.static_shapes import StaticShapes, platform_index, variant_file
from jaxport.domain.targets.litert import RUNTIME_NAME, SUFFIX, check_names, check_operators
from jaxport.domain.targets.litert import LiteRtOptions, details_of
from jaxport.domain.targets.litert import SHARED_FILE, shared_record, signature_key
from jaxport.domain.targets.ports import ConversionJob, ConvertedParts
from jaxport.adapters.storage.safetensors_file import SafetensorsFile
from .module import converter_module

try:
    from . import stablehlo_to_tflite as litert_convert
    from .narrow_constants import constants_to_float16, gather_tables_to_int8
    from .runtime import LiteRtLoadError, LiteRtModel
    from .shared_model import merge_models
    from .stablehlo_to_tflite import converter_version
    from .tflite_file import FlatbufferInfo, read_flatbuffer
except MissingExtraError as exc:  # converting needs the whole extra: ai-edge-litert reads what it writes
    if exc.extra == "litert":
        raise
    raise MissingExtraError("LiteRT's runtime (ai-edge-litert), which converting reads its models with,",
                            "litert", exc.__cause__) from exc


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


def convert(job: ConversionJob, staging: str) -> ConvertedParts:
    """Writes one ``.tflite`` model per function and variant of ``job`` under ``staging``.

    Raises:
        ConversionError: what LiteRT cannot run, named (nothing is written then).
        MissingExtraError: litert-converter, ai-edge-litert or ai-edge-quantizer is missing.
    """
    options = job.options if isinstance(job.options, LiteRtOptions) else LiteRtOptions()
    weights = _weights(job)
    converted: dict[str, list[LiteRtVariant]] = {}
    for f in job.functions:
        ins, outs = f.signature.input_names, f.signature.output_names
        bound = weights[:f.signature.nr_weights]
        converted[f.name] = convert_function(f.name, f.record, weights=bound, input_names=ins, output_names=outs,
                                             shapes=f.shapes, quantize=options.quantize,
                                             calibration=[[np.asarray(a) for a in e]
                                                          for e in job.calibration.get(f.name, ())])
    if job.generation is not None:
        return _shared(converted, staging, options.quantize, sum(int(w.nbytes) for w in weights))
    variants: dict[str, tuple[Variant, ...]] = {}
    models: dict[str, tuple[int, Sequence[str]]] = {}
    for name, found in converted.items():
        files = []
        for v in found:
            file = variant_file(name, dict(v.dims), SUFFIX)
            with open(os.path.join(staging, file), "wb") as stream:
                stream.write(v.model)
            files.append(Variant(file, v.dims))
            models[file] = (v.info.constant_bytes, v.dynamic)
        variants[name] = tuple(files)
    return ConvertedParts(details_of(converter_version(), options.quantize, models), variants)


def _shared(converted: dict[str, list[LiteRtVariant]], staging: str, quantize: str | None,
            weights_bytes: int) -> ConvertedParts:
    """Every variant as a signature of :data:`SHARED_FILE`, the weights stored once (a generative bundle's)."""
    keys: dict[str, str] = {}
    parts: list[tuple[str, bytes]] = []
    variants: dict[str, tuple[Variant, ...]] = {}
    for name, found in converted.items():
        for v in found:
            key = signature_key(name, variant_file(name, dict(v.dims), ""), len(found))
            keys[key] = name
            parts.append((key, v.model))
        variants[name] = tuple(Variant(SHARED_FILE, v.dims) for v in found)
    model = merge_models(parts)
    info = read_flatbuffer(model)
    _check_loads(", ".join(converted), model)
    with open(os.path.join(staging, SHARED_FILE), "wb") as stream:
        stream.write(model)
    dynamic = sorted({d for found in converted.values() for v in found for d in v.dynamic})
    shared = shared_record(len(model), weights_bytes, info.constant_bytes, keys)
    return ConvertedParts(details_of(converter_version(), quantize, {SHARED_FILE: (info.constant_bytes, dynamic)},
                                     shared), variants)


def _weights(job: ConversionJob) -> list[np.ndarray]:
    """The weights' values in flattening order (PRNG keys as their key data), memory-mapped."""
    if job.weights is None or not job.weights_path:
        return []
    stored = SafetensorsFile(job.weights_path)
    return [stored.array(w.name, w.data_dtype) for w in job.weights.leaves]


def convert_function(name: str, record: ArtifactRecord, *, weights: Sequence[np.ndarray] = (),
                     input_names: Sequence[str], output_names: Sequence[str],
                     shapes: Sequence[StaticShapes] = (), quantize: str | None = None,
                     calibration: Sequence[Sequence[np.ndarray]] = ()) -> list[LiteRtVariant]:
    """The LiteRT models of one function: one dynamic model, or one per static shapes.

    Args:
        name: the function's name: each model's signature key.
        record: its artifact record, its module verified and the plan's refusals
            passed (:func:`jaxport.domain.targets.plan.refuse`).
        weights: the values of its first flat inputs (a bundle's weights, in
            flattening order; PRNG keys as their key data), folded into each model.
        input_names: the wire name of each of the caller's flat inputs (the weights' excluded).
        output_names: the wire name of each flat result.
        shapes: the static shapes of each model to make, as the plan gives them
            (:func:`jaxport.domain.targets.plan.variant_shapes`: one per binding of
            a symbolic function, one for a static function); empty: one model whose
            symbolic dimensions stay dynamic.
        quantize: None (float32) or one of :data:`~jaxport.domain.targets.litert.QUANTIZATIONS`
            (the options checked it).
        calibration: for ``"int8"``, examples as the caller's flat arrays (each variant
            is calibrated on those of its shapes).

    Raises:
        ConversionError: what LiteRT's tools cannot convert or run, named
            (see :mod:`jaxport.domain.targets.litert`).
        UsageError: names that do not fit the function.
        MissingExtraError: litert-converter, ai-edge-litert or ai-edge-quantizer is missing.
    """
    check_names(name, "input", input_names, len(record.in_avals) - len(weights))
    check_names(name, "output", output_names, len(record.out_avals))
    variables = dimension_variables(record.signature)
    plans: list[StaticShapes | None] = list(shapes) or [None]
    return [_variant(name, record, weights, plan, variables, input_names, output_names, quantize,
                     [dict(zip(input_names, e)) for e in calibration if _fits(e, plan, len(weights))])
            for plan in plans]


def _fits(example: Sequence[np.ndarray], plan: StaticShapes | None, nr_weights: int) -> bool:
    """Whether an example has the static shapes of ``plan`` (any, for a dynamic model)."""
    return plan is None or [tuple(a.shape) for a in example] == [tuple(s) for s in plan.in_shapes[nr_weights:]]


def _variant(name: str, record: ArtifactRecord, weights: Sequence[np.ndarray], plan: StaticShapes | None,
             variables: Sequence[str], input_names: Sequence[str], output_names: Sequence[str],
             quantize: str | None, calibration: Sequence[dict[str, np.ndarray]]) -> LiteRtVariant:
    portable = converter_module(name, record, weights, plan, platform_index(record))
    dynamic = tuple(variables) if plan is None else ()
    model = litert_convert.to_tflite(name, portable, input_names, output_names, symbolic=dynamic)
    if quantize == FLOAT16:
        model = constants_to_float16(model)
    elif quantize is not None:
        model = gather_tables_to_int8(litert_convert.quantize(name, model, quantize, calibration))
    info = read_flatbuffer(model)
    check_operators(name, info.operators)
    _check_loads(name, model)
    return LiteRtVariant(plan.dims if plan is not None else (), dynamic, model, info)


def _check_loads(name: str, model: bytes) -> None:
    """Refuses a model that LiteRT's interpreter cannot prepare (a builtin without a kernel, for one)."""
    try:
        LiteRtModel(model, xnnpack=False)
    except LiteRtLoadError as exc:
        raise ConversionError(RUNTIME_NAME, name, f"LiteRT's interpreter cannot run the converted model: "
                                                  f"{exc}") from None
