"""The two steps a quantized conversion adds to the pipeline: its calibration examples, and its check.

* Before anything is written, :func:`calibration_inputs` gathers each
  function's calibration examples as flat arrays: the caller's (``calibration``:
  function name -> a sequence of ``(args, kwargs)``, the form of
  ``save_bundle``'s ``examples``), each checked against the function's
  signature (a typed error naming the input), else the source's golden
  examples' inputs (for any mode: a converter measures each weight's
  contribution on them). A mode that needs them (``int8``) without either is
  refused, and so is ``auto`` (it chooses the weights to keep in float on them). An example that fits no variant of a function converted for static
  shapes is left out, and said so (a warning).
* Once the directory is staged, :func:`check_examples` runs the golden examples on it,
  on the target's runtime (the one numerics loop, :mod:`.golden`), and refuses the conversion (a ``ConversionError``
  naming the function, the example, the output and the error) when an
  output misses the mode's tolerance (:mod:`jaxport.domain.converted.quantization`).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from jaxport.adapters.array_compare import host_arrays
from jaxport.adapters.storage.safetensors_file import read_examples
from jaxport.domain.bundle.manifest import EXAMPLES_FILE
from jaxport.domain.calls.front import call_checker, flatten_call
from jaxport.domain.converted.manifest import ConvertedManifest
from jaxport.domain.converted.quantization import CALIBRATED
from jaxport.domain.errors import ConversionError, JaxportError
from jaxport.domain.targets.ports import FunctionJob
from jaxport.application.conversion.source import ConversionSource
from .golden import examples_on
from .loader import ConvertedLoader

#: function name -> its calibration examples, each a pair (args, kwargs) of the caller's arrays.
Calibration = Mapping[str, Sequence[tuple[Sequence[Any], Mapping[str, Any]]]]
#: function name -> its calibration examples as the caller's flat arrays.
FlatCalibration = dict[str, list[list[Any]]]


def calibration_inputs(runtime: str, jobs: Sequence[FunctionJob], src: ConversionSource,
                       calibration: Calibration | None, mode: str | None, auto: bool = False) -> FlatCalibration:
    """Each function's calibration examples as flat arrays (see the module's docstring).

    Raises:
        ConversionError: ``calibration`` names a function the source lacks, an
            example does not fit its function (naming the input), or ``mode``
            needs calibration (or ``auto`` examples) and there is none.
    """
    by_name = {j.name: j for j in jobs}
    flat: FlatCalibration = {}
    if calibration:
        unknown = sorted(set(calibration) - set(by_name))
        if unknown:
            raise ConversionError(runtime, unknown[0], f"calibration names it, and the source has only "
                                                       f"{sorted(by_name)}")
        for name, examples in calibration.items():
            flat[name] = [_flat_example(runtime, by_name[name], i, example) for i, example in enumerate(examples)]
    elif mode is not None:
        flat = golden_inputs(src, by_name)
    if mode in CALIBRATED:
        flat = {name: _fitting(runtime, by_name[name], examples) for name, examples in flat.items()}
    if (mode in CALIBRATED or auto) and not any(flat.values()):
        needs = (f"the quantization {mode!r} is calibrated" if mode in CALIBRATED
                 else "auto chooses the weights to keep in float")
        raise ConversionError(runtime, None, f"{needs} on examples, and there are none: give calibration="
                                             "{FUNCTION: [(args, kwargs), ...]} (on the command line --calibration "
                                             "FUNCTION=FILE.npz), or convert a bundle saved with examples")
    return flat


def _flat_example(runtime: str, job: FunctionJob, index: int, example: Any) -> list[Any]:
    """One calibration example as the caller's flat arrays, checked against the function's signature."""
    if not (isinstance(example, (tuple, list)) and len(example) == 2 and isinstance(example[1], Mapping)):
        raise ConversionError(runtime, job.name, f"calibration example {index} is not a pair (args, kwargs)")
    try:
        leaves = host_arrays(flatten_call(job.signature, example[0], example[1]))
        call_checker(job.signature).check(leaves)
    except JaxportError as exc:
        raise ConversionError(runtime, job.name, f"calibration example {index} does not fit it: {exc}") from None
    return leaves


def golden_inputs(src: ConversionSource, jobs: Mapping[str, FunctionJob]) -> FlatCalibration:
    """The inputs of the source's golden examples of ``jobs``' functions, as flat arrays."""
    if not src.examples_blob:
        return {}
    flat: FlatCalibration = {}
    for example, (inputs, _) in zip(src.examples, read_examples(src.examples_blob, src.examples, file=EXAMPLES_FILE)):
        if example.function in jobs:
            flat.setdefault(example.function, []).append(inputs)
    return flat


def _fitting(runtime: str, job: FunctionJob, examples: list[list[Any]]) -> list[list[Any]]:
    """The examples that fit a variant of ``job`` (all, for a variant of any size); says which it left out."""
    if not job.shapes:
        return examples
    check = call_checker(job.signature)
    bindings = [dict(s.dims) for s in job.shapes]
    kept: list[int] = []
    left: list[int] = []
    for i, example in enumerate(examples):
        (kept if check.check(example) in bindings else left).append(i)
    if left:
        warnings.warn(f"{runtime}: the calibration examples {left} of '{job.name}' fit none of its variants "
                      f"({bindings}): left out", stacklevel=3)
    return [examples[i] for i in kept]


def check_examples(staging: Path, manifest: ConvertedManifest, runtime: str, loader: ConvertedLoader) -> None:
    """Runs the golden examples on the staged directory (loaded by ``loader``); refuses one whose
    output misses the tolerance.

    Raises:
        ConversionError: naming the function, the example, the output and the error.
    """
    quantization = manifest.quantization
    if quantization is None or not manifest.examples:
        return
    report = examples_on(staging, loader.load(staging, verify=False))  # written by this conversion, here
    for c in report.failures:
        said = c.problem or (f"its largest error is {c.max_abs_error:.4g}, {c.relative_error:.2%} of its "
                             f"largest magnitude {c.max_reference:.4g}, beyond the {quantization.mode} "
                             f"tolerance ({c.tolerance})")
        kept = f" (kept in float: {', '.join(quantization.kept_float)})" if quantization.kept_float else ""
        raise ConversionError(runtime, c.function, f"golden example {c.example}: the quantized model's "
                                                   f"{c.output}: {said}{kept}")
    if report.left_out:
        warnings.warn(f"{runtime}: the golden examples {list(report.left_out)} fit none of the compiled variants: "
                      "left out of the check of the quantized model", stacklevel=3)
