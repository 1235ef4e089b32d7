"""The one numerics loop: a directory's golden examples run on a model, each output compared.

:func:`run_examples` reads the examples' arrays (:func:`~jaxport.adapters.storage.safetensors_file.read_examples`,
the file's digest checked first), runs each example through the call front
of a :class:`~.model.ConvertedModel` (a converted directory's, or a
bundle's on JAX: :func:`~.jax_model.jax_model`), compares each output with
the recorded one (:func:`~jaxport.adapters.array_compare.compare`) within its
tolerance, and gives the domain's report
(:mod:`jaxport.domain.converted.numerics`). ``check_numerics``
(:mod:`.numerics`), the verifying child (:mod:`.verify_child`) and the
quantized conversion's check (:mod:`.quantized`) all run it. It imports no JAX.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jaxport.adapters.array_compare import compare
from jaxport.adapters.storage.safetensors_file import read_examples
from jaxport.domain.bundle.manifest import Example, WeightRecord
from jaxport.domain.checked_directory import FileDigest
from jaxport.domain.errors import UncompiledSizeError
from jaxport.domain.calls.front import result_paths
from jaxport.domain.converted.numerics import (
    EXACT, NumericsReport, OutputCheck, Tolerance, check_example_fits, tolerance_for
)
from jaxport.domain.errors import JaxportError
from jaxport.domain.targets.registry import target
from .model import ConvertedModel


@dataclass(frozen=True)
class GoldenExamples:
    """A directory's golden examples and the model that runs them.

    Attributes:
        root: the directory.
        file: its examples file, relative to ``root``.
        owner: what holds the file, in messages (``"bundle"``, ``"directory"``).
        files: the manifest's digests of the directory's files (the examples file's among them).
        examples: the golden examples, in order.
        model: runs each example's function on its flat inputs.
        restore: makes one stored input array the runtime's (a bundle's key data a key
            array on JAX); None: the arrays as stored.
        tolerance: the tolerance of floating outputs for this directory (a quantized
            one's recorded tolerance), where the caller gives none; None: each dtype's default.
    """

    root: Path
    file: str
    owner: str
    files: Mapping[str, FileDigest]
    examples: tuple[Example, ...]
    model: ConvertedModel
    restore: Callable[[WeightRecord, Any], Any] | None = None
    tolerance: Tolerance | None = None


def run_examples(path: str, runtime: str, golden: GoldenExamples, rtol: float | None = None,
                 atol: float | None = None, *, converted: bool = False, fitting_only: bool = False
                 ) -> NumericsReport:
    """Runs every golden example on ``golden.model`` and compares each output with the recorded one.

    Args:
        path, runtime, converted: what the report names (see :class:`NumericsReport`).
        golden: the examples and their model.
        rtol, atol: the caller's tolerances of floating and complex outputs (None: the
            directory's, else the dtype's default).
        fitting_only: an example that fits no compiled variant is left out (the report's
            ``left_out``) rather than failed.

    Raises:
        ArtifactError: the examples file changed after it was written, or an example's
            pytrees are not its function's.
    """
    model = golden.model
    for example in golden.examples:
        function = model[example.function].signature
        check_example_fits(example, function.in_tree, function.out_tree, golden.file)
    arrays = read_examples((golden.root / golden.file).read_bytes(), golden.examples, file=golden.file,
                           digest=golden.files[golden.file], owner=golden.owner) if golden.examples else []
    checks: list[OutputCheck] = []
    left_out: list[str] = []
    for example, (inputs, wanted) in zip(golden.examples, arrays):
        if golden.restore is not None:
            inputs = [golden.restore(r, a) for r, a in zip(example.inputs, inputs)]
        try:
            got, failure = model[example.function].run_flat(inputs), None
        except JaxportError as exc:
            if fitting_only and isinstance(exc, UncompiledSizeError):
                left_out.append(f"{example.function}[{example.index}]")
                continue
            got, failure = [], f"the call failed: {type(exc).__name__}: {' '.join(str(exc).split())}"
        for i, (record, want, where) in enumerate(zip(example.outputs, wanted, result_paths(example.out_tree))):
            error, reference, problem = (0.0, 0.0, failure) if failure is not None else compare(got[i], want)
            checks.append(OutputCheck(example.function, example.index, where, record.dtype,
                                      _tolerance(record.dtype, rtol, atol, golden.tolerance), error, reference,
                                      problem))
    return NumericsReport(path, runtime, len(golden.examples), tuple(checks), converted, tuple(left_out))


def _tolerance(dtype: str, rtol: float | None, atol: float | None, target: Tolerance | None) -> Tolerance:
    """The caller's tolerance, else the target's for a floating output, else the dtype's default."""
    if target is not None and tolerance_for(dtype) != EXACT:
        rtol = target.rtol if rtol is None else rtol
        atol = target.atol if atol is None else atol
    return tolerance_for(dtype, rtol, atol)


def examples_on(path: str | Path, model: ConvertedModel) -> NumericsReport:
    """The golden examples of the converted directory at ``path`` run on ``model`` (loaded from it)
    with the directory's tolerances, those that fit a compiled variant only (what the verifying
    child of :mod:`.verify_directory` and a quantized conversion check: a directory compiled for other
    sizes than an example's is not damaged)."""
    return run_examples(str(path), model.target, converted_examples(Path(path), model), fitting_only=True)


def converted_examples(root: Path, model: ConvertedModel) -> GoldenExamples:
    """The golden examples of a converted directory on its target's runtime (``model``, loaded from
    it), which holds the weights: each example runs on its inputs alone, through the call front (no JAX)."""
    manifest = model.manifest
    loosest = target(manifest.target).plan.numerics_tolerance
    recorded = manifest.quantization.tolerance if manifest.quantization is not None else \
        None if loosest is None else loosest(manifest.target_details)
    return GoldenExamples(root, manifest.examples_file, "directory", manifest.files, manifest.examples, model,
                          tolerance=recorded)
