"""``check_numerics``: a directory's golden examples run again on a runtime and compared with JAX's outputs.

Each kind of directory runs on its own runtime: a bundle on JAX, a
directory that jaxport converted on its target's runtime (through
:func:`jaxport.load_converted`). A bundle can be checked on another runtime
by the target's name (``"savedmodel"``, ``"iree"``: the registry's,
:mod:`jaxport.domain.targets.registry`): it is converted first, into a temporary
directory, as ``jaxport convert`` would (for a target of static shapes: the
functions that have examples, compiled for the examples' sizes), and that
directory is checked. The arithmetic of the verdict and the report are the
domain's (:mod:`jaxport.domain.converted.numerics`).

Checking a converted directory, or a bundle on TensorFlow or IREE, imports no JAX (the verifying child refines shapes for IREE).
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jaxport.adapters.array_compare import compare
from jaxport.adapters.storage.bundle_dir import read_manifest
from jaxport.adapters.storage.safetensors_file import read_small_file
from jaxport.domain.bundle.manifest import EXAMPLES_FILE, FORMAT_NAME, MANIFEST_FILE, Example, FileDigest
from jaxport.domain.errors import ArtifactError, JaxportError, UsageError
from jaxport.domain.converted.manifest import manifest_format
from jaxport.domain.converted.numerics import (
    EXACT, NumericsReport, OutputCheck, Tolerance, check_example_fits, tolerance_for
)
from jaxport.domain.calls.errors import UncompiledSizeError
from jaxport.domain.calls.front import call_checker, result_paths, with_weights_bound
from jaxport.domain.targets.registry import TARGETS, target
from jaxport.application.conversion.source import read_source
from .jax_model import JAX
from .model import ConvertedModel, is_converted, load_converted, read_converted

#: Runs one example's function on its flat inputs; gives the flat outputs as host arrays.
Run = Callable[[Example, Sequence[Any]], Sequence[Any]]


@dataclass(frozen=True)
class OpenedDirectory:
    """A directory ready for the check: its examples, their arrays, and how to run them.

    Attributes:
        examples: the golden examples, in order.
        arrays: reads every example's arrays (its inputs, then its outputs), in order.
        run: runs one example on the runtime.
        tolerance: the tolerance of floating outputs for this directory (a quantized
            one's recorded tolerance), where the caller gives none; None: each dtype's default.
    """

    examples: tuple[Example, ...]
    arrays: Callable[[], list[Any]]
    run: Run
    tolerance: Tolerance | None = None


def check_numerics(path: str | os.PathLike[str], *, runtime: str | None = None,
                   rtol: float | None = None, atol: float | None = None) -> NumericsReport:
    """Runs the golden examples of a directory again and compares each output with JAX's at save.

    A bundle runs on JAX; a directory that jaxport converted runs on its
    target's runtime (a SavedModel on TensorFlow, IREE modules on IREE; an
    example of a size that was not compiled fails). Each output passes when its largest absolute error is at
    most ``atol + rtol *`` its largest recorded magnitude; the defaults
    depend on the dtype (``float32``: ``rtol=1e-5, atol=1e-6``; integers,
    booleans and keys exact; the table: :mod:`jaxport.domain.converted.numerics`).

    Args:
        path: a bundle saved with ``examples``, or a directory converted from one.
        runtime: another runtime to check a bundle on, a target's name
            (``"savedmodel"``, ``"iree"``; :data:`jaxport.domain.targets.registry.TARGETS`):
            the bundle is converted into a temporary directory first. None:
            the directory's own runtime.
        rtol, atol: the tolerances of floating and complex outputs, instead of
            the defaults (integers, booleans and keys stay exact).

    Returns:
        The report: one check per output of each example (``.ok``: there were
        examples and every output passed; ``str()``: a table).

    Raises:
        ArtifactError: ``path`` is not a directory jaxport wrote, or a file
            of it (the examples' included) is damaged or was changed after saving.
        UsageError: ``runtime`` is unknown, or not one this directory can be
            checked on.
        ValueError: ``rtol`` or ``atol`` is negative.
        ConversionError: the bundle cannot be converted for ``runtime``.
        MissingExtraError: the runtime is not installed.
    """
    tolerance_for("float32", rtol, atol)  # the caller's tolerances are checked before anything runs
    root = Path(path)
    own = _own_runtime(root)
    chosen = own if runtime is None else _named(runtime)
    if chosen == own:
        opened = _open_bundle(root) if own == JAX else _open_converted(root)
        return _run_examples(os.fspath(path), own, opened, rtol, atol, converted=False)
    if own != JAX:
        raise UsageError(f"{path} is a directory converted for {own}: it is checked on {own} only (a bundle "
                         f"can be checked on {', '.join(_runtimes())})")
    if not read_manifest(root).examples:  # nothing to run: no conversion either
        return NumericsReport(os.fspath(path), chosen, 0, (), converted=True)
    with tempfile.TemporaryDirectory(prefix="jaxport-numerics-") as tmp:
        converted = Path(tmp, chosen)
        _convert(root, converted, chosen)
        return _run_examples(os.fspath(path), chosen, _open_converted(converted), rtol, atol, converted=True)


def _runtimes() -> list[str]:
    return [JAX, *TARGETS]


def _named(runtime: str) -> str:
    if runtime not in _runtimes():
        raise UsageError(f"There is no runtime {runtime!r} to check numerics on; there are "
                         f"{', '.join(_runtimes())}")
    return runtime


def _own_runtime(root: Path) -> str:
    if not root.exists():
        raise FileNotFoundError(2, "No such file or directory", os.fspath(root))
    if not root.is_dir():
        raise NotADirectoryError(20, "Not a directory (a bundle or a directory converted from one)",
                                 os.fspath(root))
    try:
        if manifest_format((root / MANIFEST_FILE).read_bytes()) == FORMAT_NAME:
            return JAX
    except OSError:
        pass
    if is_converted(root):
        return read_converted(root)[0].target
    raise ArtifactError(f"{root} is not a bundle or a directory converted from one by jaxport: it has "
                        "none of their manifests")


def _run_examples(path: str, runtime: str, opened: OpenedDirectory, rtol: float | None, atol: float | None,
                  *, converted: bool, fitting_only: bool = False) -> NumericsReport:
    """``fitting_only``: an example that fits no compiled variant is left out rather than failed."""
    arrays = iter(opened.arrays())
    checks: list[OutputCheck] = []
    for example in opened.examples:
        inputs = [next(arrays) for _ in example.inputs]
        wanted = [next(arrays) for _ in example.outputs]
        try:
            got, failure = list(opened.run(example, inputs)), None
        except JaxportError as exc:
            if fitting_only and isinstance(exc, UncompiledSizeError):
                continue
            got, failure = [], f"the call failed: {type(exc).__name__}: {' '.join(str(exc).split())}"
        for i, (record, want, where) in enumerate(zip(example.outputs, wanted, result_paths(example.out_tree))):
            tolerance = _tolerance(record.dtype, rtol, atol, opened.tolerance)
            if failure is not None:
                checks.append(OutputCheck(example.function, example.index, where, record.dtype, tolerance,
                                          problem=failure))
                continue
            error, reference, problem = compare(got[i], want)
            checks.append(OutputCheck(example.function, example.index, where, record.dtype, tolerance,
                                      error, reference, problem))
    return NumericsReport(path, runtime, len(opened.examples), tuple(checks), converted)


def _tolerance(dtype: str, rtol: float | None, atol: float | None, target: Tolerance | None) -> Tolerance:
    """The caller's tolerance, else the target's for a floating output, else the dtype's default."""
    if target is not None and tolerance_for(dtype) != EXACT:
        rtol = target.rtol if rtol is None else rtol
        atol = target.atol if atol is None else atol
    return tolerance_for(dtype, rtol, atol)


def _examples_reader(root: Path, name: str, examples: tuple[Example, ...], digest: FileDigest | None,
                     owner: str) -> Callable[[], list[Any]]:
    """Reads the examples' arrays (nothing without examples), checking the file's digest first."""
    def read() -> list[Any]:
        if not examples or digest is None:
            return []
        return read_small_file(root / name, [w for e in examples for w in e.arrays], file=name, digest=digest,
                               owner=owner)

    return read


def _open_bundle(root: Path) -> OpenedDirectory:
    """A bundle on JAX: each function called through the call front, its weights bound by the runtime."""
    from jaxport.adapters.jax.bundles.weights import restore_weight
    from jaxport.application.bundles.api import load_bundle
    from .jax_model import jax_model

    bundle = load_bundle(root)
    manifest = bundle.manifest
    model = jax_model(bundle)
    for example in manifest.examples:
        record = model[example.function].record
        check_example_fits(example, record.in_tree, record.out_tree, EXAMPLES_FILE)

    def run(example: Example, inputs: Sequence[Any]) -> Sequence[Any]:
        leaves = [restore_weight(r, a, None) for r, a in zip(example.inputs, inputs)]
        return model[example.function].run_flat(leaves)

    return OpenedDirectory(manifest.examples, _examples_reader(root, EXAMPLES_FILE, manifest.examples,
                                                               manifest.files.get(EXAMPLES_FILE), "bundle"), run)


def examples_on(path: str | os.PathLike[str], model: ConvertedModel) -> NumericsReport:
    """The golden examples of the converted directory at ``path`` run on ``model`` (loaded from it)
    with the directory's tolerances, those that fit a compiled variant only (what the verifying
    child of :mod:`.verification` checks: a directory compiled for other sizes than an example's
    is not damaged)."""
    return _run_examples(os.fspath(path), model.target, _open_converted(Path(path), model), None, None,
                         converted=False, fitting_only=True)


def _open_converted(root: Path, model: ConvertedModel | None = None) -> OpenedDirectory:
    """A converted directory on its target's runtime, which holds the weights: each example runs on
    its inputs alone, through the call front (no JAX)."""
    if model is None:  # verified first; a golden example answered wrongly is this report's to show
        from .model import verify_converted

        verify_converted(root).raise_if_failed(str(root), but_wrong_examples=True)
        model = load_converted(root, verify=False)
    manifest = model.manifest
    file = manifest.examples_file
    for example in manifest.examples:
        record = model[example.function].record
        check_example_fits(example, record.in_tree, record.out_tree, file)

    def run(example: Example, inputs: Sequence[Any]) -> Sequence[Any]:
        return model[example.function].run_flat(list(inputs))

    loosest = target(manifest.target).plan.numerics_tolerance
    recorded = manifest.quantization.tolerance if manifest.quantization is not None else \
        None if loosest is None else loosest(manifest.target_details)
    return OpenedDirectory(manifest.examples, _examples_reader(root, file, manifest.examples,
                                                               manifest.files.get(file), "directory"), run,
                           recorded)


def _convert(bundle: Path, out: Path, to: str) -> None:
    """Converts the bundle for ``to``; for a target of static shapes, or one that takes bindings
    (LiteRT, whose converter cannot keep every function dynamic), the functions that have
    examples, for the sizes of their examples."""
    from jaxport.application.conversion.pipeline import write_converted

    entry = target(to)
    source = read_source(bundle)
    dims: dict[str, list[dict[str, int]]] | None = None
    if entry.plan.needs_bindings or entry.plan.bindings_optional:
        functions = {f.name: f for f in source.functions}
        dims = {}
        for example in source.examples:
            function = functions[example.function]
            record = with_weights_bound(function.record, len(source.weights)) if function.takes_params \
                else function.record
            binding = call_checker(record).check(example.inputs)  # the records' shapes and dtypes
            if binding and binding not in dims.setdefault(example.function, []):
                dims[example.function].append(binding)
        kept = tuple(f for f in source.functions if f.name in {e.function for e in source.examples})
        source = dataclasses.replace(source, functions=kept)
        dims = {name: bindings for name, bindings in dims.items() if bindings}
    write_converted(source, out, entry, entry.options(), dims)
