"""The one numerics loop: a directory's golden examples run on a model, each output compared.

:func:`run_examples` reads the examples' arrays (:func:`~jaxport.adapters.storage.safetensors_file.read_examples`,
the file read from the directory the model was opened from, its digest checked at read), runs each example through the call front
of a :class:`~.model.ConvertedModel` (a converted directory's, or a
bundle's on JAX: :func:`~.jax_model.jax_model`), compares each output with
the recorded one (:func:`~jaxport.adapters.array_compare.compare`) within its
tolerance, and gives the domain's report
(:mod:`jaxport.domain.converted.numerics`). ``check_numerics``
(:mod:`.numerics`), the verifying child (:mod:`.verify_child`) and the
quantized conversion's check (:mod:`.quantized`) all run it. It imports no JAX.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jaxport.adapters.array_compare import compare
from jaxport.adapters.storage.safetensors_file import read_examples
from jaxport.domain.bundle.manifest import WeightRecord
from jaxport.domain.errors import ArtifactError, JaxportError, UncompiledSizeError
from jaxport.domain.calls.front import result_paths
from jaxport.domain.converted.numerics import (
    EXACT, NumericsReport, OutputCheck, Tolerance, check_example_fits, tolerance_for
)
from jaxport.domain.converted.manifest import ConvertedManifest
from jaxport.domain.path_kind import PathKind
from jaxport.domain.targets.registry import TARGETS
from .model import ConvertedModel


def run_examples(path: str, model: ConvertedModel, rtol: float | None = None, atol: float | None = None, *,
                 converted: bool = False, fitting_only: bool = False) -> NumericsReport:
    """Runs every golden example of the directory ``model`` was loaded from on ``model`` and compares each
    output with the recorded one: a bundle's on JAX (their key data made key arrays), a converted
    directory's on its target's runtime, which holds the weights (each example runs on its inputs alone,
    through the call front, without JAX).

    Args:
        path, converted: what the report names (see :class:`NumericsReport`; its runtime: ``model``'s target).
        rtol, atol: the caller's tolerances of floating and complex outputs (None: the directory's (a
            quantized one's recorded tolerance, a target's own), else the dtype's default).
        fitting_only: an example that fits no compiled variant is left out (the report's
            ``left_out``) rather than failed.

    Raises:
        ArtifactError: the examples file changed after it was written, or an example's
            pytrees are not its function's, or ``model`` was not loaded from a directory.
    """
    manifest, directory = model.manifest, model.directory
    if directory is None:
        raise ArtifactError(f"{model!r} was not loaded from a directory: it has no golden examples")
    examples, file = manifest.examples, manifest.examples_file
    for example in examples:
        function = model[example.function].signature
        check_example_fits(example, function.in_tree, function.out_tree, file)
    arrays = read_examples(directory.read(file), examples, file=file) if examples else []
    bundle = directory.kind is PathKind.BUNDLE
    own = None if bundle else manifest.quantization.tolerance if manifest.quantization is not None else \
        _loosest(manifest)
    checks: list[OutputCheck] = []
    left_out: list[str] = []
    for example, (inputs, wanted) in zip(examples, arrays):
        if bundle:
            inputs = [_key_arrays(r, a) for r, a in zip(example.inputs, inputs)]
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
                                      _tolerance(record.dtype, rtol, atol, own), error, reference,
                                      problem))
    return NumericsReport(path, model.target, len(examples), tuple(checks), converted, tuple(left_out))


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
    return run_examples(str(path), model, fitting_only=True)


def _loosest(manifest: ConvertedManifest) -> Tolerance | None:
    """The tolerance of the converted directory's target for its floating outputs (None: the dtypes')."""
    loosest = TARGETS[manifest.target].plan.numerics_tolerance
    return None if loosest is None else loosest(manifest.target_details)


def _key_arrays(record: WeightRecord, array: Any) -> Any:
    """A stored input as JAX's (a PRNG key's data as the key array: bundles run on JAX)."""
    from jaxport.adapters.jax.bundles.weights import restore_weight  # JAX: a bundle's examples only

    return restore_weight(record, array, None)
