"""The one conversion pipeline behind ``jaxport.convert``, for every runtime target of the registry.

:class:`ConversionPipeline` is the service, built once in the composition root
(:func:`jaxport.application.wiring.conversion_pipeline`) on the verifying
process; its public functions are :mod:`jaxport.application.conversion.api`'s
(the command ``jaxport convert`` is :mod:`jaxport.application.cli.convert`).

In order, for any target (:mod:`jaxport.domain.targets.registry`):

1. read the source (:func:`jaxport.application.conversion.source.read_source`: an ``Exported``,
   a ``Bundle``, or the path of an artifact or bundle by jaxport or
   ``jax.export``; a lone artifact becomes one function named after the
   exported function);
2. the target's plan, once, for every function, before any converter is
   imported: what the record says (:func:`~jaxport.domain.targets.plan.refuse_record`,
   and the target's own refusals given its options, ONNX's ``web`` for one);
   each module verified in the verifying child process, which also walks it
   for its custom calls and hands it back written again, in the standard form
   of dimension arguments (the converter gets those bytes only, and asks the
   child for any other form: :class:`~jaxport.domain.targets.ports.ModuleForms`),
   and those custom calls refused (:func:`~jaxport.domain.targets.plan.refuse_custom_calls`), and
   the operations every converter unfolds, on a dtype the target has no form for
   (:func:`~jaxport.domain.targets.plan.refuse_unfolded`);
   the bindings of ``dims`` checked against each function's constraints
   (:func:`~jaxport.domain.targets.plan.variant_shapes`); for a quantization (the options'
   ``quantize``), the calibration examples (:mod:`.quantized`);
3. one step after another, each one layer down: a fresh directory beside
   ``path``; the target's converter writes its files there (and repeats none
   of the plan's checks); the examples and the manifest (every file's size
   and digest) are added; a quantized directory runs its golden examples
   within its mode's tolerance (:func:`.quantized.check_examples`); the
   directory is moved into place in one step (or,
   on any failure or interruption, removed). An existing ``path`` is refused
   with ``FileExistsError`` unless ``overwrite=True``.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from jaxport.adapters.jax.installed import require_jax
from jaxport.adapters.mlir.rewrite import standard_request
from jaxport.adapters.mlir.serialization_form import MIXED_SERIALIZATION
from jaxport.adapters.storage import atomic_directory
from jaxport.adapters.storage.atomic_directory import file_digests
from jaxport.domain.artifact.record import ArtifactRecord
from jaxport.domain.bundle.manifest import EXAMPLES_FILE, MANIFEST_FILE
from jaxport.domain.generation.spec import TOKENIZER_FILE
from jaxport.domain.converted.manifest import ConvertedFunction, ConvertedManifest, WeightsTable
from jaxport.domain.errors import ArtifactError, ConversionError
from jaxport.domain.calls.front import with_weights_bound
from jaxport.domain.targets.plan import refuse_custom_calls, refuse_record, refuse_unfolded, variant_shapes
from jaxport.domain.ports import ModuleWorker
from jaxport.domain.targets.ports import ConversionJob, ConvertedParts, Converter, FunctionJob, ModuleForms
from jaxport.domain.targets.registry import TargetEntry, target
from jaxport.domain.artifact.verification import check_main_types
from jaxport.domain.converted.quantization import Quantization, check_keep_float, quantization
from jaxport.application.conversion.quantized import Calibration, FlatCalibration, calibration_inputs, check_examples
from jaxport.application.conversion.source import ConversionSource, SourceFunction, read_source
from jaxport.application import target_adapters

if TYPE_CHECKING:
    from jaxport.adapters.jax.bundles.loaded import Bundle
    from jaxport.application.conversion.loader import ConvertedLoader
    from jaxport.adapters.jax.exported.exported import Exported

#: dims: function name -> the bindings of its dimension variables to make a variant for.
Dims = Mapping[str, Sequence[Mapping[str, int]]]


@dataclass(frozen=True, slots=True)
class ConversionPipeline:
    """Converts sources for runtime targets (:func:`jaxport.convert`), every module verified first.

    The composition root builds the process's one (:func:`jaxport.application.wiring.conversion_pipeline`);
    a test makes its own on its own ports.

    Attributes:
        worker: the verifying process that parses, checks and writes again each module of the source.
        forms: what writes the other forms of a module that a converter asks for.
        loader: what loads the staged directory of a quantized conversion, to run its golden examples.
    """

    worker: ModuleWorker
    forms: ModuleForms
    loader: ConvertedLoader

    def convert(self, source: Exported | Bundle | str | os.PathLike[str], path: str | os.PathLike[str], *,
                to: str, options: object | None = None, dims: Dims | None = None,
                calibration: Calibration | None = None, overwrite: bool = False) -> ConvertedManifest:
        """:func:`jaxport.convert`, on this pipeline's ports."""
        entry = target(to)
        require_jax()  # every target's converter reads the modules with JAX's MLIR
        if options is None:
            options = entry.options()
        if type(options) is not entry.options:
            raise TypeError(f"options for to={to!r} are a {entry.options.__name__}, not a {type(options).__name__}")
        out = Path(path)
        if os.path.lexists(out) and not overwrite:
            raise FileExistsError(f"{out} exists: pass overwrite=True (jaxport convert --force) to replace it")
        return self.write(read_source(source, self.loader.directories), out, entry, options, dims, calibration)

    def write(self, src: ConversionSource, out: Path, entry: TargetEntry, options: object,
              dims: Dims | None, calibration: Calibration | None = None) -> ConvertedManifest:
        """:meth:`convert` of what :func:`~jaxport.application.conversion.source.read_source` read
        (``out`` replaceable)."""
        unknown = sorted(set(dims or {}) - {f.name for f in src.functions})
        if unknown:
            raise ConversionError(entry.plan.runtime, None, f"dims names {unknown}, which the source does not "
                                                            f"have (it has {[f.name for f in src.functions]})")
        jobs = tuple(_job(entry, f, src, (dims or {}).get(f.name), options, self.worker) for f in src.functions)
        mode = getattr(options, "quantize", None)
        check_keep_float(getattr(options, "keep_float", ()), [w.name for w in src.weights], mode)
        calibrated = calibration_inputs(entry.plan.runtime, jobs, src, calibration, mode,
                                        getattr(options, "auto", False))
        weights = None if src.params_tree is None or not any(j.signature.nr_weights for j in jobs) else \
            WeightsTable(src.params_tree, src.weights, "", src.weights_header_sha256)
        converter = target_adapters.converter(entry)  # imported once every function passed the plan
        staging = atomic_directory.new_directory_beside(out)
        try:
            parts = _fill(converter, jobs, src, weights, options, staging, calibrated, self.forms)
            manifest = _seal(entry, parts, jobs, src, weights, staging,
                             quantization(mode, getattr(options, "tolerance", None), parts.quantized))
            check_examples(staging, manifest, entry.plan.runtime, self.loader)
            atomic_directory.move_into_place(staging, out)
        except BaseException:
            atomic_directory.discard(staging)
            raise
        return manifest


def _job(entry: TargetEntry, function: SourceFunction, src: ConversionSource,
         bindings: Sequence[Mapping[str, int]] | None, options: object, worker: ModuleWorker) -> FunctionJob:
    """The plan's checks of one function, each once, in order: the record (and the target's own
    refusals), the module (verified and walked in the verifying child) and its custom calls, the bindings."""
    plan = entry.plan
    nr_weights = len(src.weights) if function.takes_params else 0
    record = function.record
    signature = dataclasses.replace(with_weights_bound(record.signature, nr_weights), name=function.name)
    refuse_record(plan, function.name, record, nr_weights=nr_weights)
    if plan.refuse_function is not None:
        plan.refuse_function(signature, record, options)
    record, custom_calls, shardy, unfolded = _verified(plan.runtime, function.name, record, worker,
                                                       with_vjp=plan.keeps_vjp)
    refuse_custom_calls(plan, function.name, custom_calls, plan.allowed_custom_calls(options))
    refuse_unfolded(plan, function.name, unfolded)
    shapes = variant_shapes(plan, function.name, record, bindings, nr_weights=nr_weights)
    return FunctionJob(function.name, record, signature, custom_calls, shapes, shardy)


def _verified(runtime: str, name: str, record: ArtifactRecord, worker: ModuleWorker, *,
              with_vjp: bool) -> tuple[ArtifactRecord, tuple[str, ...], bool, tuple[tuple[str, str, str], ...]]:
    """The record as the verifying child hands it back, the custom calls of its module (and of its
    first VJP), whether it uses Shardy and the operations the converters unfold: the child parses and verifies each module, walks it,
    and writes it again, in the standard form of dimension arguments. The record holds those
    modules only (its first VJP's for a target that keeps it, else none): nothing in this
    process parses bytes the child has not accepted.

    Raises:
        ConversionError: the module does not verify or does not match its record.
    """
    calls: list[str] = []
    unfolded: list[tuple[str, str, str]] = []
    shardy = False
    modules: list[bytes] = []
    for one in (record, record.vjp) if with_vjp and record.vjp is not None else (record,):
        form = standard_request(one)
        try:
            checked = worker.check(one.mlir_module_serialized, sdy=MIXED_SERIALIZATION,
                                   form=None if form is None else {"standard": form})
        except ArtifactError as exc:
            raise ConversionError(runtime, name, f"its module does not verify: {exc}") from exc
        problems = check_main_types(one, checked.facts)
        if problems:
            raise ConversionError(runtime, name, "its module does not match its record: " + "; ".join(problems))
        calls.extend(c for c in checked.facts.custom_call_targets if c not in calls)
        shardy = shardy or checked.facts.uses_shardy
        unfolded.extend(checked.facts.unfolded)
        modules.append(checked.reserialized)
    return record.with_modules(modules), tuple(calls), shardy, tuple(unfolded)


def _fill(converter: Converter, jobs: tuple[FunctionJob, ...], src: ConversionSource,
          weights: WeightsTable | None, options: object, staging: Path,
          calibrated: FlatCalibration, forms: ModuleForms) -> ConvertedParts:
    """The converter's step: the target's files written into ``staging``."""
    weights_path = src.weights_file
    temporary = None
    if weights is not None and not weights_path and src.write_weights is not None:
        temporary = staging / ".weights.safetensors"
        with open(temporary, "xb") as stream:
            src.write_weights(stream)
        weights_path = str(temporary)
    job = ConversionJob(jobs, weights, weights_path, options, jobs[0].name if len(jobs) == 1 else None,
                        forms, calibrated, src.generation)
    parts = converter(job, str(staging))
    if temporary is not None:
        temporary.unlink()
    return parts


def _seal(entry: TargetEntry, parts: ConvertedParts, jobs: tuple[FunctionJob, ...], src: ConversionSource,
          weights: WeightsTable | None, staging: Path, quantized: Quantization | None) -> ConvertedManifest:
    """The manifest's step: the examples added, every file digested, ``manifest.json`` written."""
    names = {j.name for j in jobs}
    examples = tuple(e for e in src.examples if e.function in names) if src.examples_blob else ()
    examples_file = _beside_manifest(entry, staging, EXAMPLES_FILE, src.examples_blob) if examples else ""
    generation = src.generation
    if generation is not None and src.tokenizer_blob:
        tokenizer = _beside_manifest(entry, staging, TOKENIZER_FILE, src.tokenizer_blob)
        generation = dataclasses.replace(generation, tokenizer=tokenizer)
    if weights is not None:
        weights = WeightsTable(weights.tree, weights.leaves, parts.weights_file,
                               weights.header_sha256 if parts.weights_file else "")
    functions = tuple(ConvertedFunction(j.signature, parts.variants[j.name]) for j in jobs)
    manifest = ConvertedManifest(entry.name, parts.target_details, functions, weights, examples, examples_file,
                                 file_digests(staging), jax_version=jobs[0].record.jax_version,
                                 quantization=quantized, generation=generation)
    _beside_manifest(entry, staging, MANIFEST_FILE, manifest.to_json())
    return manifest


def _beside_manifest(entry: TargetEntry, staging: Path, name: str, data: bytes) -> str:
    """Writes ``data`` as the file ``name`` of the folder that keeps the target's manifest; its path."""
    path = f"{entry.manifest_dir}/{name}" if entry.manifest_dir else name
    (staging / path).parent.mkdir(parents=True, exist_ok=True)
    (staging / path).write_bytes(data)
    return path
