"""``check_numerics``: a directory's golden examples run again on a runtime and compared with JAX's outputs.

Each kind of directory runs on its own runtime: a bundle on JAX, a
SavedModel that jaxport converted on TensorFlow, a directory of IREE modules
on IREE. A bundle can be checked on another runtime by name: it is converted
first, into a temporary directory, as ``jaxport convert`` would (for IREE:
the functions that have examples, compiled for the examples' sizes), and
that directory is checked. Each runtime is one entry of :data:`RUNTIMES`;
the arithmetic of the verdict and the report are the domain's
(:mod:`jaxport.domain.numerics`).

Checking a SavedModel or an IREE directory, or a bundle on TensorFlow,
imports no JAX (converting a bundle for IREE does: JAX refines its shapes).
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..adapters.array_compare import compare
from ..adapters.bundle_dir import read_manifest
from ..adapters.safetensors_file import read_small_file
from ..domain.bundle import EXAMPLES_FILE, FORMAT_NAME, MANIFEST_FILE, Example, FileDigest
from ..domain.errors import ArtifactError, JaxportError, UsageError
from ..domain.iree_manifest import FORMAT_NAME as IREE_FORMAT, manifest_format
from ..domain.numerics import NumericsReport, OutputCheck, check_example_fits, tolerance_for
from ..domain.runtime_calls import call_signature, caller_tree, result_paths, with_weights_bound
from ..domain.savedmodel_manifest import EXAMPLES_PATH
from .runtime_function import RuntimeFunction
from .savedmodel_load import is_savedmodel

#: What the JAX runtime runs, and what the other runtimes' directories are converted from.
BUNDLE = "bundle"
#: Runs one example's function on its flat inputs; gives the flat outputs as host arrays.
Run = Callable[[Example, Sequence[Any]], Sequence[Any]]


@dataclass(frozen=True)
class OpenedDirectory:
    """A directory ready for the check: its examples, their arrays, and how to run them.

    Attributes:
        examples: the golden examples, in order.
        arrays: reads every example's arrays (its inputs, then its outputs), in order.
        run: runs one example on the runtime.
    """

    examples: tuple[Example, ...]
    arrays: Callable[[], list[Any]]
    run: Run


@dataclass(frozen=True)
class NumericsRuntime:
    """A runtime that golden examples are checked on.

    Attributes:
        name: its name (``check_numerics(path, runtime=name)``).
        runs: what it runs: the directories for which :attr:`is_for` holds.
        is_for: whether a directory is of the kind this runtime runs.
        open: opens such a directory.
        convert: writes a bundle as such a directory (None for JAX, which runs bundles).
    """

    name: str
    runs: str
    is_for: Callable[[Path], bool]
    open: Callable[[Path], OpenedDirectory]
    convert: Callable[[Path, Path], None] | None


def check_numerics(path: str | os.PathLike[str], *, runtime: str | None = None,
                   rtol: float | None = None, atol: float | None = None) -> NumericsReport:
    """Runs the golden examples of a directory again and compares each output with JAX's at save.

    A bundle runs on JAX; a SavedModel that jaxport converted runs on
    TensorFlow, a directory of IREE modules on IREE (an example of a size
    that was not compiled fails). Each output passes when its largest absolute error is at
    most ``atol + rtol *`` its largest recorded magnitude; the defaults
    depend on the dtype (``float32``: ``rtol=1e-5, atol=1e-6``; integers,
    booleans and keys exact; the table: :mod:`jaxport.domain.numerics`).

    Args:
        path: a bundle saved with ``examples``, or a directory converted from one.
        runtime: another runtime to check a bundle on (``"tf"``, ``"iree"``):
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
    if chosen is own:
        return _run_examples(os.fspath(path), own.name, own.open(root), rtol, atol, converted=False)
    if own.runs != BUNDLE or chosen.convert is None:
        raise UsageError(f"{path} is a {own.runs}: it is checked on {own.name} only (a bundle can be "
                         f"checked on {', '.join(RUNTIMES)})")
    if not read_manifest(root).examples:  # nothing to run: no conversion either
        return NumericsReport(os.fspath(path), chosen.name, 0, (), converted=True)
    with tempfile.TemporaryDirectory(prefix="jaxport-numerics-") as tmp:
        converted = Path(tmp, chosen.name)
        chosen.convert(root, converted)
        return _run_examples(os.fspath(path), chosen.name, chosen.open(converted), rtol, atol, converted=True)


def _named(runtime: str) -> NumericsRuntime:
    try:
        return RUNTIMES[runtime]
    except KeyError:
        raise UsageError(f"There is no runtime {runtime!r} to check numerics on; there are "
                         f"{', '.join(RUNTIMES)}") from None


def _own_runtime(root: Path) -> NumericsRuntime:
    if not root.exists():
        raise FileNotFoundError(2, "No such file or directory", os.fspath(root))
    if not root.is_dir():
        raise NotADirectoryError(20, "Not a directory (a bundle or a directory converted from one)",
                                 os.fspath(root))
    for entry in RUNTIMES.values():
        if entry.is_for(root):
            return entry
    raise ArtifactError(f"{root} is not a bundle or a directory converted from one by jaxport: it has "
                        "none of their manifests")


def _run_examples(path: str, runtime: str, opened: OpenedDirectory, rtol: float | None, atol: float | None,
                  *, converted: bool) -> NumericsReport:
    arrays = iter(opened.arrays())
    checks: list[OutputCheck] = []
    for example in opened.examples:
        inputs = [next(arrays) for _ in example.inputs]
        wanted = [next(arrays) for _ in example.outputs]
        try:
            got, failure = list(opened.run(example, inputs)), None
        except JaxportError as exc:
            got, failure = [], f"the call failed: {type(exc).__name__}: {' '.join(str(exc).split())}"
        for i, (record, want, where) in enumerate(zip(example.outputs, wanted, result_paths(example.out_tree))):
            tolerance = tolerance_for(record.dtype, rtol, atol)
            if failure is not None:
                checks.append(OutputCheck(example.function, example.index, where, record.dtype, tolerance,
                                          problem=failure))
                continue
            error, reference, problem = compare(got[i], want)
            checks.append(OutputCheck(example.function, example.index, where, record.dtype, tolerance,
                                      error, reference, problem))
    return NumericsReport(path, runtime, len(opened.examples), tuple(checks), converted)


def _examples_reader(root: Path, name: str, examples: tuple[Example, ...], digest: FileDigest | None,
                     owner: str) -> Callable[[], list[Any]]:
    """Reads the examples' arrays (nothing without examples), checking the file's digest first."""
    def read() -> list[Any]:
        if not examples or digest is None:
            return []
        return read_small_file(root / name, [w for e in examples for w in e.arrays], file=name, digest=digest,
                               owner=owner)

    return read


def _manifest_names(root: Path, format_name: str) -> bool:
    """Whether ``root`` has a ``manifest.json`` of that format."""
    try:
        data = (root / MANIFEST_FILE).read_bytes()
    except OSError:
        return False
    return manifest_format(data) == format_name


def _open_bundle(root: Path) -> OpenedDirectory:
    """A bundle on JAX: each function called through the runtime port with the weights first."""
    import jax

    from ..adapters.jax_runtime import JaxRuntime
    from ..adapters.jax_weights import restore_weight
    from .bundles import load_bundle

    bundle = load_bundle(root)
    manifest = bundle.manifest
    weights = jax.tree.leaves(bundle.params)
    records = {name: exp.record for name, exp in bundle.functions.items()}
    exported = {id(exp.record): exp for exp in bundle.functions.values()}
    runtime = JaxRuntime(lambda record: exported[id(record)])  # the bundle's own, made already
    functions = {name: RuntimeFunction(record, runtime) for name, record in records.items()}
    takes = {e.name: e.takes_params for e in manifest.functions}
    for example in manifest.examples:
        record = records[example.function]
        in_tree = caller_tree(example.function, record.in_tree, len(weights)) if takes[example.function] \
            else record.in_tree
        check_example_fits(example, in_tree, record.out_tree, EXAMPLES_FILE)

    def run(example: Example, inputs: Sequence[Any]) -> Sequence[Any]:
        leaves = [restore_weight(r, a, None) for r, a in zip(example.inputs, inputs)]
        first = weights if takes[example.function] else []
        return functions[example.function].run_flat([*first, *leaves])

    return OpenedDirectory(manifest.examples, _examples_reader(root, EXAMPLES_FILE, manifest.examples,
                                                               manifest.files.get(EXAMPLES_FILE), "bundle"), run)


def _open_savedmodel(root: Path) -> OpenedDirectory:
    """A SavedModel on TensorFlow: each signature called through the runtime port (no JAX)."""
    from .savedmodel_load import read_savedmodel, savedmodel_functions

    manifest, records = read_savedmodel(root)
    return _weights_held(root, savedmodel_functions(root, manifest, records), manifest.examples, EXAMPLES_PATH,
                         manifest.files.get(EXAMPLES_PATH), "SavedModel")


def _weights_held(root: Path, functions: Mapping[str, RuntimeFunction], examples: tuple[Example, ...],
                  file: str, digest: FileDigest | None, owner: str) -> OpenedDirectory:
    """A converted directory, whose runtime holds the weights: each example runs on its inputs alone."""
    for example in examples:
        record = functions[example.function].record
        check_example_fits(example, record.in_tree, record.out_tree, file)

    def run(example: Example, inputs: Sequence[Any]) -> Sequence[Any]:
        return functions[example.function].run_flat(list(inputs))

    return OpenedDirectory(examples, _examples_reader(root, file, examples, digest, owner), run)


def _to_savedmodel(bundle: Path, out: Path) -> None:
    from .savedmodel_convert import to_savedmodel

    to_savedmodel(bundle, out)


def _open_iree(root: Path) -> OpenedDirectory:
    """A directory of IREE modules on IREE: each function called through the runtime port (no JAX)."""
    from .iree_load import load_iree

    model = load_iree(root)
    return _weights_held(root, model, model.manifest.examples, EXAMPLES_FILE,
                         model.manifest.files.get(EXAMPLES_FILE), "directory")


def _to_iree(bundle: Path, out: Path) -> None:
    """Compiles the bundle's functions that have examples, for the sizes of their examples."""
    from .conversion_source import read_source
    from .iree_convert import write_iree

    source = read_source(bundle)
    functions = {f.name: f for f in source.functions}
    dims: dict[str, list[dict[str, int]]] = {}
    for example in source.examples:
        function = functions[example.function]
        record = with_weights_bound(function.record, len(source.weights)) if function.takes_params \
            else function.record
        binding = call_signature(record).check(example.inputs)  # the records' shapes and dtypes
        if binding and binding not in dims.setdefault(example.function, []):
            dims[example.function].append(binding)
    kept = tuple(f for f in source.functions if f.name in {e.function for e in source.examples})
    write_iree(dataclasses.replace(source, functions=kept), out, dims=dims)


#: The runtimes by name, each with the directories it runs and how a bundle is converted for it.
RUNTIMES: dict[str, NumericsRuntime] = {
    "jax": NumericsRuntime("jax", BUNDLE, lambda root: _manifest_names(root, FORMAT_NAME), _open_bundle, None),
    "tf": NumericsRuntime("tf", "TensorFlow SavedModel", is_savedmodel, _open_savedmodel, _to_savedmodel),
    "iree": NumericsRuntime("iree", "directory of IREE modules", lambda root: _manifest_names(root, IREE_FORMAT),
                            _open_iree, _to_iree),
}
