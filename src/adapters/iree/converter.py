"""The IREE converter (the registry's converter of ``"iree"``): one ``.vmfb`` per function and binding.

Each binding (checked by the pipeline, with the plan's refusals) is refined
to static shapes first as XLA refines them (JAX's own pass, run by the
verifying child: the converting process imports neither JAX nor jaxlib),
then compiled by IREE's compiler with the weights as parameters of scope ``model``, read
from ``params.safetensors``, which the directory keeps as the bundle wrote
it (``iree-run-module --parameters=model=params.safetensors``).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from jaxport.adapters.storage.safetensors_file import SafetensorsFile
from jaxport.domain.bundle.manifest import WEIGHTS_FILE
from jaxport.domain.converted.manifest import Variant
from jaxport.domain.errors import ConversionError
from jaxport.domain.converted.static_shapes import platform_index, variant_file
from jaxport.domain.targets.iree import IreeTarget, requested_cpu
from jaxport.domain.targets.iree import PLAN_NAME, SUFFIX, IreeOptions, check_parameter_names, details_of
from jaxport.domain.targets.ports import ConversionJob, ConvertedParts, FunctionJob
from . import compiler as iree_compiler


def convert(job: ConversionJob, staging: str) -> ConvertedParts:
    """Compiles every function of ``job`` into ``staging`` (see the module's docstring).

    Raises:
        ConversionError: JAX's refinement or IREE's compiler refused a function,
            a weight's key cannot name a parameter, or the target is unknown.
        MissingExtraError: IREE's compiler is not installed.
    """
    options: IreeOptions = job.options
    takes_weights = job.weights is not None and any(f.signature.nr_weights for f in job.functions)
    if takes_weights and job.weights is not None:
        check_parameter_names([w.name for w in job.weights.leaves], bytes(SafetensorsFile(job.weights_path).header))
    target = iree_compiler.resolve_target(requested_cpu(options.target_cpu, options.target_triple),
                                          options.target_triple)
    variants: dict[str, tuple[Variant, ...]] = {}
    for function in job.functions:
        variants[function.name] = tuple(_compile(function, job, target, Path(staging)))
    if takes_weights:
        shutil.copyfile(job.weights_path, Path(staging, WEIGHTS_FILE))
    return ConvertedParts(details_of(target, iree_compiler.compiler_version()), variants,
                          WEIGHTS_FILE if takes_weights else "")


def _compile(function: FunctionJob, job: ConversionJob, target: IreeTarget,
             staging: Path) -> list[Variant]:
    nr_weights = function.signature.nr_weights
    names = [job.weights.leaves[i].name if job.weights is not None and i < nr_weights else None
             for i in range(len(function.record.in_avals))]
    variants = []
    for shapes in function.shapes:  # one per binding, checked by the pipeline (one for a static function)
        try:
            portable = job.forms.specialized(function.record, shapes, platform_index(function.record))
        except ValueError as exc:
            raise ConversionError(PLAN_NAME, function.name, f"JAX's shape refinement refused it for "
                                                               f"{dict(shapes.dims)}: {exc}") from exc
        file = variant_file(_file_name(function.name), dict(shapes.dims), SUFFIX)
        (staging / file).write_bytes(iree_compiler.compile_module(
            function.name, portable, names, _module_name(file), target))
        variants.append(Variant(file, shapes.dims))
    return variants


def _file_name(function: str) -> str:
    """The function's name as the start of a file name (a bundle's names already are)."""
    return re.sub(r"[^A-Za-z0-9_.\-]", "_", function)


def _module_name(file: str) -> str:
    """The name of the VM module in ``file``."""
    return re.sub(r"\W", "_", file.removesuffix(SUFFIX))
