"""The ONNX target's converter: one ``FUNCTION.onnx`` per function, the weights file kept as it is.

(With ``quantize``, the weights are written quantized into the directory's own weights file
instead, :mod:`jaxport.adapters.onnx.quantize`; the float32 file is not copied.)

With ``web``, the directory also gets ``jaxport.mjs`` (:mod:`jaxport.adapters.web.module`),
listed in the manifest like every other file. Every model reads its weights as ONNX external data at their offsets in the
directory's ``params.safetensors`` (a copy of the source's, byte for byte:
not a hard link, which ``onnx.checker`` refuses as a possible hard-link
attack); nothing derived from a weight is written. Inputs and outputs carry
the converted directory's wire names; a weight's initializer is named
``weights:KEY`` (``:`` never occurs in a wire name). Each model is checked
with ``onnx.checker`` at full strength where it is written, its external
data in place.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

from jaxport.domain.bundle.manifest import WEIGHTS_FILE
from jaxport.domain.converted.manifest import Variant
from jaxport.domain.errors import MissingExtraError
from jaxport.domain.artifact.producer import JAXPORT_VERSION
from jaxport.domain.converted.quantization import INT8, MODES, WeightQuantization
from jaxport.domain.targets.onnx import DEFAULT_OPSET, NEWEST_OPSET, OnnxOptions, details_of
from jaxport.domain.targets.ports import ConversionJob, ConvertedParts, FunctionJob

try:
    import onnx
except ImportError as exc:  # the extra is not installed
    raise MissingExtraError("The ONNX converter (onnx)", "onnx", exc) from exc

import numpy as np

from .check import check_file
from .genai import write_genai
from .contributions import WeightChoice, choose
from .quantize import PREFIX, WeightsStore, activations, inline, quantize_model, weights_file_name
from .translate import external_tensors, translate
from jaxport.adapters.storage.safetensors_file import SafetensorsFile
from jaxport.adapters.web.module import copy_module


def convert(job: ConversionJob, staging: str) -> ConvertedParts:
    """Writes each function of ``job`` as ONNX under ``staging`` (see the module's docstring).

    Raises:
        UnsupportedOperationError: an operation without exact translation (named, with its location).
        ConversionError: a model ONNX's checker refuses.
        MissingExtraError: the ``onnx`` package is not installed.
    """
    options: OnnxOptions = job.options
    takes_weights = job.weights is not None and any(f.signature.nr_weights for f in job.functions)
    header = bytes(SafetensorsFile(job.weights_path).header) if takes_weights else b""
    variants: dict[str, tuple[Variant, ...]] = {}
    dim_params: dict[str, list[str]] = {}
    store = WeightsStore() if options.quantize else None
    stored = SafetensorsFile(job.weights_path) if takes_weights and store is not None else None
    models = [_translate(function, job, header, options) for function in job.functions]
    report = _quantize(models, job, stored, options, store) if store is not None else ()
    weights_file = WEIGHTS_FILE if takes_weights else ""
    if store is not None:
        weights_file = weights_file_name(str(options.quantize)) if store.tensors else ""
        if store.tensors:
            with open(Path(staging, weights_file), "xb") as stream:
                store.write(stream, weights_file, models)
    elif takes_weights:
        shutil.copyfile(job.weights_path, Path(staging, WEIGHTS_FILE))
    for function, model in zip(job.functions, models):
        file = f"{re.sub(r'[^A-Za-z0-9_.-]', '_', function.name)}.onnx"
        path = Path(staging) / file
        onnx.save(model, str(path))
        variants[function.name] = (Variant(file),)
        dim_params[function.name] = list(dict.fromkeys(
            d.dim_param for v in (*model.graph.input, *model.graph.output)
            for d in v.type.tensor_type.shape.dim if d.dim_param))
    for function in job.functions:  # the weights in place: the checker reads the external data
        check_file(Path(staging, variants[function.name][0].file), function.name)
    if options.web:
        copy_module(staging)
    newest = max((m.opset_import[0].version for m in models), default=None)
    details = details_of(options, onnx.__version__, f"jaxport {JAXPORT_VERSION}", dim_params, weights_file, newest)
    spec = job.generation
    prefill = next((i for i, f in enumerate(job.functions) if spec is not None and f.name == spec.prefill), None)
    if spec is not None and prefill is not None:  # a generative bundle: ONNX Runtime GenAI's files where it fits
        details.update(write_genai(staging, spec, job.functions[prefill].signature, models[prefill],
                                   {v[0].file for v in variants.values()}))
    return ConvertedParts(details, variants, weights_file if weights_file == WEIGHTS_FILE else "", report)


def _quantize(models: list[onnx.ModelProto], job: ConversionJob, stored: SafetensorsFile | None,
              options: OnnxOptions, store: WeightsStore) -> tuple[WeightQuantization, ...]:
    """Quantizes ``models`` in place into ``store``, but the weights kept in float (the options' patterns,
    ``auto``'s choice: :mod:`.contributions`); returns the report of each weight the mode could quantize."""
    mode = str(options.quantize)
    ranges = [_calibrated(m, f, job, stored) if mode == INT8 else None for m, f in zip(models, job.functions)]

    def quantized(model: onnx.ModelProto, into: WeightsStore, keep: frozenset[str],
                  calibrated: dict[str, tuple[float, float]] | None) -> onnx.ModelProto:
        quantize_model(model, mode, lambda key: _stored(job, stored, key), into, calibrated, keep.__contains__)
        return model

    def measured(keep: frozenset[str]) -> list[bytes]:  # auto's check: each model quantized, self-contained
        scratch, out = WeightsStore(), []
        for model, calibrated in zip(models, ranges):
            copy = onnx.ModelProto()
            copy.CopyFrom(model)
            scratch.inline(quantized(copy, scratch, keep, calibrated))
            out.append(copy.SerializeToString())
        return out

    choice = WeightChoice(mode, options.tolerance or MODES[mode], options.keep_float, options.auto)
    keep, report = choose(models, [f.signature.input_names for f in job.functions],
                          [job.calibration.get(f.name, ()) for f in job.functions],
                          lambda key: _stored(job, stored, key), choice, measured, job.functions[0].name)
    for model, calibrated in zip(models, ranges):
        quantized(model, store, keep, calibrated)
    return report


def _calibrated(model: onnx.ModelProto, function: FunctionJob, job: ConversionJob,
                stored: SafetensorsFile | None) -> dict[str, tuple[float, float]]:
    """The ranges of the products' activations over the function's calibration examples (run by ONNX
    Runtime on the float32 model, its weights inside)."""
    examples = job.calibration.get(function.name, ())
    if not examples:
        return {}
    from .runtime import activation_ranges  # ONNX Runtime (another extra) only when calibrating

    whole = onnx.ModelProto()
    whole.CopyFrom(model)
    for tensor in whole.graph.initializer:
        if tensor.data_location == onnx.TensorProto.EXTERNAL and tensor.name.startswith(PREFIX):
            inline(tensor, np.ascontiguousarray(_stored(job, stored, tensor.name.removeprefix(PREFIX))).tobytes())
    wanted = activations(model)
    known = {o.name for o in whole.graph.output}
    whole.graph.output.extend(onnx.ValueInfoProto(name=n) for n in wanted if n not in known)
    names = function.signature.input_names
    feeds = [{n: np.asarray(a, np.float32) if np.asarray(a).dtype.name == "bfloat16" else np.asarray(a)
              for n, a in zip(names, example)} for example in examples]
    return activation_ranges(whole.SerializeToString(), wanted, feeds, function.name)


def _stored(job: ConversionJob, stored: SafetensorsFile | None, key: str) -> np.ndarray:
    """The stored array of the weight ``key``."""
    assert stored is not None and job.weights is not None  # a model reads weights only when the job has them
    record = next(w for w in job.weights.leaves if w.name == key)
    return stored.array(key, record.data_dtype)


def _translate(function: FunctionJob, job: ConversionJob, header: bytes, options: OnnxOptions) -> onnx.ModelProto:
    count = function.signature.nr_weights
    leaves = job.weights.leaves[:count] if job.weights is not None and count else ()
    weights = external_tensors(header, [w.name for w in leaves], WEIGHTS_FILE) if leaves else []
    metadata = {"jaxport.function": function.name,
                "jaxport.module_sha256": hashlib.sha256(function.record.mlir_module_serialized).hexdigest()}
    if job.weights is not None and leaves:
        metadata["jaxport.weights_header_sha256"] = job.weights.header_sha256
    return translate(function.record,
                     input_names=[*(f"weights:{w.name}" for w in leaves), *function.signature.input_names],
                     output_names=list(function.signature.output_names), weights=weights, metadata=metadata,
                     producer_version=JAXPORT_VERSION, opset=options.opset or DEFAULT_OPSET,
                     max_opset=options.opset or NEWEST_OPSET, ir_version=options.ir_version)
