"""``check_numerics``: a directory's golden examples run again on a runtime and compared with JAX's outputs.

Each kind of directory runs on its own runtime: a bundle on JAX, a
directory that jaxport converted on its target's runtime (through
:func:`jaxport.load_converted`). A bundle can be checked on another runtime
by the target's name (``"savedmodel"``, ``"iree"``: the registry's,
:mod:`jaxport.domain.targets.registry`): it is converted first, into a temporary
directory, as ``jaxport convert`` would (for a target of static shapes: the
functions that have examples, compiled for the examples' sizes), and that
directory is checked. The examples run in the one numerics loop (:mod:`.golden`); the
arithmetic of the verdict and the report are the domain's (:mod:`jaxport.domain.converted.numerics`).

Checking a converted directory, or a bundle on TensorFlow or IREE, imports no JAX (the verifying child refines shapes for IREE).
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from pathlib import Path
from typing import Any

from jaxport.domain.errors import UsageError
from jaxport.domain.opened_directory import OpenedDirectory
from jaxport.domain.path_kind import PathKind
from jaxport.domain.converted.numerics import NumericsReport, tolerance_for
from jaxport.domain.calls.front import call_checker, with_weights_bound
from jaxport.domain.targets.registry import TARGETS, target
from jaxport.application.conversion.source import bundle_source
from jaxport.application.target_adapters import JAX
from .api import load_model, open_directory, verify_converted, write_converted
from .golden import run_examples
from .model import ConvertedModel


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
    if not os.path.isdir(path):
        raise (NotADirectoryError(20, "Not a directory (a bundle or a directory converted from one)", os.fspath(path))
               if os.path.exists(path) else FileNotFoundError(2, "No such file or directory", os.fspath(path)))
    directory = open_directory(path)
    own = JAX if directory.kind is PathKind.BUNDLE else directory.manifest.target
    chosen = own if runtime is None else _named(runtime)
    if chosen == own:
        return run_examples(os.fspath(path), _verified(directory), rtol, atol)
    if directory.kind is not PathKind.BUNDLE:
        raise UsageError(f"{path} is a directory converted for {own}: it is checked on {own} only (a bundle "
                         f"can be checked on {', '.join(_runtimes())})")
    if not directory.manifest.examples:  # nothing to run: no conversion either
        return NumericsReport(os.fspath(path), chosen, 0, (), converted=True)
    with tempfile.TemporaryDirectory(prefix="jaxport-numerics-") as tmp:
        converted = Path(tmp, chosen)
        _convert(directory, converted, chosen)
        return run_examples(os.fspath(path), _verified(open_directory(converted)), rtol, atol, converted=True)


def _runtimes() -> list[str]:
    return [JAX, *TARGETS]


def _named(runtime: str) -> str:
    if runtime not in _runtimes():
        raise UsageError(f"There is no runtime {runtime!r} to check numerics on; there are "
                         f"{', '.join(_runtimes())}")
    return runtime


def _verified(directory: OpenedDirectory[Any]) -> ConvertedModel:
    """The model of ``directory``, verified first: a golden example answered wrongly is the report's to show."""
    if directory.kind is PathKind.BUNDLE:
        return load_model(directory)
    verify_converted(directory).raise_if_failed(directory.root, but_wrong_examples=True)
    return load_model(directory, verify=False)


def _convert(bundle: OpenedDirectory[Any], out: Path, to: str) -> None:
    """Converts the bundle for ``to``; for a target of static shapes, or one that takes bindings
    (LiteRT, whose converter cannot keep every function dynamic), the functions that have
    examples, for the sizes of their examples."""
    entry = target(to)
    source = bundle_source(bundle)
    dims: dict[str, list[dict[str, int]]] | None = None
    if entry.plan.needs_bindings or entry.plan.bindings_optional:
        functions = {f.name: f for f in source.functions}
        dims = {}
        for example in source.examples:
            function = functions[example.function]
            caller = with_weights_bound(function.record.signature, len(source.weights) if function.takes_params else 0)
            binding = call_checker(caller).check(example.inputs)  # the records' shapes and dtypes
            if binding and binding not in dims.setdefault(example.function, []):
                dims[example.function].append(binding)
        kept = tuple(f for f in source.functions if f.name in {e.function for e in source.examples})
        source = dataclasses.replace(source, functions=kept)
        dims = {name: bindings for name, bindings in dims.items() if bindings}
    write_converted(source, out, entry, entry.options(), dims)
