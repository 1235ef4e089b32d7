"""``to_iree``: artifacts and bundles compiled ahead of time with IREE, into one directory."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..domain.artifact import ArtifactRecord
from ..domain.bundle import EXAMPLES_FILE, WEIGHTS_FILE, FileDigest
from ..domain.errors import ConversionError
from ..domain.iree_conversion import (
    RUNTIME_NAME, StaticShapes, check_convertible, check_custom_calls, check_parameter_names, platform_index,
    static_shapes)
from ..domain.iree_manifest import (EXAMPLES_FREE_VERSION, FORMAT_VERSION, CompiledModule, IreeFunction, IreeManifest,
                                    module_file)
from ..domain.iree_target import HOST, IreeTarget, requested_cpu
from ..domain.runtime_calls import with_weights_bound
from ..domain.signature_record import signature
from .conversion_source import ConversionSource, SourceFunction, read_source

if TYPE_CHECKING:
    from .bundles import Bundle
    from .exported import Exported

#: dims: function name -> the bindings of its dimension variables to compile for.
Dims = Mapping[str, Sequence[Mapping[str, int]]]


def to_iree(source: Exported | Bundle | str | os.PathLike[str], path: str | os.PathLike[str], *,
            dims: Dims | None = None, target_cpu: str = HOST,
            target_triple: str | None = None) -> IreeManifest:
    """Compiles every function of ``source`` with IREE into the directory ``path``.

    The directory holds one ``.vmfb`` module per function and binding of its
    dimension variables (``predict.b=8.vmfb``), the bundle's weights file
    ``params.safetensors`` shared by all of them (each module reads the
    weights from it as IREE parameters, memory-mapped), and ``manifest.json``
    (each function's signature as its callers see it, what each module was
    compiled for, the target, the digest of every file). Each binding is
    refined to static shapes first as XLA refines them (JAX's own pass, so
    converting imports JAX; :func:`jaxport.load_iree` does not). Every check
    runs before anything is compiled; the directory is written atomically
    (a failed or interrupted conversion leaves nothing at ``path``, or the
    previous directory as it was). A bundle directory's golden examples go
    along (``examples.safetensors``), for :func:`jaxport.check_numerics`;
    an example of a size not compiled for fails there.

    Args:
        source: an :class:`~jaxport.Exported` (one function, named after the
            exported function), a :class:`~jaxport.Bundle`, or the path of an
            artifact file or a bundle directory (by jaxport or ``jax.export``).
        path: the directory to write (a previous one there is replaced).
        dims: for each symbolic function, the bindings to compile for:
            ``{"predict": [{"b": 1}, {"b": 8}]}``, ``[{"b": 1, "t": 16}, ...]``
            for several variables.
        target_cpu: the CPU to compile for: ``"host"`` (this machine's), an
            LLVM CPU name (``"x86-64-v3"``, ``"cortex-a72"``), ``"generic"``.
        target_triple: the machine to compile for (``"aarch64-linux-gnu"``);
            None for this one. With a triple, ``"host"`` means ``"generic"``.

    Returns:
        The manifest written.

    Raises:
        ConversionError: what IREE cannot run (a custom call such as JAX's
            LAPACK kernels or a host callback, ordered effects, a module for
            several devices, a dtype IREE does not hold, no CPU platform), a
            symbolic function without dims, a binding that violates its
            constraints, a target IREE does not know; the message names the
            function and what stands in the way.
        ArtifactError: a source file is not a valid artifact or bundle.
        MissingExtraError: IREE's compiler is not installed.
        FileExistsError: ``path`` exists and is not a converted directory or bundle.
    """
    return write_iree(read_source(source), path, dims=dims, target_cpu=target_cpu, target_triple=target_triple)


def write_iree(src: ConversionSource, path: str | os.PathLike[str], *, dims: Dims | None = None,
               target_cpu: str = HOST, target_triple: str | None = None) -> IreeManifest:
    """:func:`to_iree` of what :func:`.conversion_source.read_source` read."""
    from ..adapters import iree_compiler

    unknown = sorted(set(dims or {}) - {f.name for f in src.functions})
    if unknown:
        raise ConversionError(RUNTIME_NAME, None, f"dims names {unknown}, which the source does not "
                                                  f"have (it has {[f.name for f in src.functions]})")
    plans = [(f, _shapes(f, src, (dims or {}).get(f.name))) for f in src.functions]
    if any(f.takes_params for f in src.functions):
        check_parameter_names([w.name for w in src.weights], src.weights_header)
    target = iree_compiler.resolve_target(requested_cpu(target_cpu, target_triple), target_triple)
    portables = {(f.name, s.dims): _portable(f, s) for f, shapes in plans for s in shapes}
    blobs: dict[str, bytes] = {}
    functions = []
    for f, shapes in plans:
        parameters = _parameters(f, src)
        modules = []
        for s in shapes:
            file = module_file(_file_name(f.name), dict(s.dims))
            blobs[file] = iree_compiler.compile_module(
                f.name, portables[(f.name, s.dims)], parameters, _module_name(file), target)
            modules.append(CompiledModule(file, s.dims))
        functions.append(IreeFunction(f.name, _caller_signature(f, src), f.takes_params, tuple(modules)))
    return _write(path, src, tuple(functions), target, blobs, iree_compiler.compiler_version())


def _shapes(function: SourceFunction, src: ConversionSource,
            bindings: Sequence[Mapping[str, int]] | None) -> list[StaticShapes]:
    count = _nr_weights(function, src)
    check_convertible(function.name, function.record, nr_weights=count)
    return static_shapes(function.name, function.record, bindings, nr_weights=count)


def _nr_weights(function: SourceFunction, src: ConversionSource) -> int:
    return len(src.weights) if function.takes_params else 0


def _portable(function: SourceFunction, shapes: StaticShapes) -> bytes:
    """The module to compile for ``shapes``, its custom calls checked."""
    from ..adapters.jax_specialize import specialize
    from .wiring import module_inspector

    try:
        portable, calls = specialize(function.record, shapes, platform_index(function.record),
                                     module_inspector())
    except ValueError as exc:
        raise ConversionError(RUNTIME_NAME, function.name, f"JAX's shape refinement refused it for "
                                                           f"{dict(shapes.dims)}: {exc}") from exc
    check_custom_calls(function.name, calls)
    return portable


def _parameters(function: SourceFunction, src: ConversionSource) -> list[str | None]:
    """Per flat input, the weight's key (read as a parameter) or None (the caller's argument)."""
    count = _nr_weights(function, src)
    return [src.weights[i].name if i < count else None for i in range(len(function.record.in_avals))]


def _caller_signature(function: SourceFunction, src: ConversionSource) -> ArtifactRecord:
    record = function.record
    if function.takes_params:
        record = with_weights_bound(record, len(src.weights))
    return signature(function.name, record.in_tree, record.in_avals, record.out_tree,
                     record.out_avals, record.constraints)


def _file_name(function: str) -> str:
    """The function's name as the start of a file name (a bundle's names already are)."""
    return re.sub(r"[^A-Za-z0-9_.\-]", "_", function)


def _module_name(file: str) -> str:
    """The name of the VM module in ``file``."""
    return re.sub(r"\W", "_", file.removesuffix(".vmfb"))


def _write(path: str | os.PathLike[str], src: ConversionSource, functions: tuple[IreeFunction, ...],
           target: IreeTarget, blobs: dict[str, bytes], compiler: str) -> IreeManifest:
    from ..adapters.bundle_dir import write_bundle

    files: dict[str, Any] = {file: (lambda stream, blob=blob: stream.write(blob)) for file, blob in blobs.items()}
    with_weights = any(f.takes_params for f in functions) and src.write_weights is not None
    if with_weights:
        files[WEIGHTS_FILE] = src.write_weights
    names = {f.name for f in functions}
    examples = tuple(e for e in src.examples if e.function in names)
    if examples:
        files[EXAMPLES_FILE] = lambda stream: stream.write(src.examples_blob)
    written: list[IreeManifest] = []

    def manifest(digests: dict[str, FileDigest]) -> bytes:
        written.append(IreeManifest(functions, target, compiler,
                                    src.params_tree if with_weights else None,
                                    src.weights if with_weights else (), digests,
                                    FORMAT_VERSION if examples else EXAMPLES_FREE_VERSION,
                                    src.weights_header_sha256 if with_weights else "", examples))
        return written[-1].to_json()

    write_bundle(path, files, manifest)
    return written[-1]
