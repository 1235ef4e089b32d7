"""``load_iree``: a directory that :func:`jaxport.to_iree` wrote, ready to call, without JAX.

Nothing here imports JAX, jaxlib or TensorFlow: the manifest is read with the
standard library, calls are checked by jaxport's domain code, and IREE's
runtime runs the modules.
"""

from __future__ import annotations

import os
import types
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ..adapters.bundle_dir import entries as directory_entries, read_weights, sha256_many
from ..domain.errors import ArtifactError
from ..domain.iree_manifest import MANIFEST_FILE, IreeFunction, IreeManifest, check_digests, check_listing
from ..domain.iree_target import check_runs_here
from .runtime_function import RuntimeFunction


class IreeModel(Mapping[str, RuntimeFunction]):
    """The functions of a converted directory: ``model["predict"](x)`` runs ``predict`` with IREE.

    Each call is checked first (pytree, dtypes, ranks, shapes, dimension
    variables and constraints) with the errors of :mod:`jaxport.errors`; a
    size that no module was compiled for raises
    :class:`~jaxport.errors.UncompiledSizeError`. Results are NumPy arrays in
    the function's result pytree (a custom node comes back as a tuple).

    Attributes:
        functions: names -> what was compiled for each (signature, modules).
        params: the weights by key path (``"dense/w"``), as read-only NumPy
            views of the weights file (a PRNG key array as its key data).
        manifest: the directory's manifest.
    """

    def __init__(self, manifest: IreeManifest, runtime: Any, params: Mapping[str, Any]) -> None:
        self.manifest = manifest
        self.functions: Mapping[str, IreeFunction] = types.MappingProxyType(
            {f.name: f for f in manifest.functions})
        self.params: Mapping[str, Any] = types.MappingProxyType(dict(params))
        self._calls = {f.name: RuntimeFunction(f.signature, runtime) for f in manifest.functions}

    def __getitem__(self, name: str) -> RuntimeFunction:
        try:
            return self._calls[name]
        except KeyError:
            raise KeyError(f"The directory has no function {name!r}; it has {sorted(self._calls)}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._calls)

    def __len__(self) -> int:
        return len(self._calls)

    def __repr__(self) -> str:
        return f"IreeModel(functions={list(self._calls)}, target={self.manifest.target})"


def load_iree(path: str | os.PathLike[str], *, driver: str = "local-task") -> IreeModel:
    """The functions of the directory that :func:`jaxport.to_iree` wrote at ``path``.

    Before IREE reads anything, the directory is checked against its
    manifest (exactly its files, each of the recorded size; each module's
    SHA-256 digest, and the weights file's header and each weight's, which
    cover every byte of it) and its target against this machine. A ``.vmfb`` holds native
    code: load only directories you trust; the digests detect damage, not malice.

    Args:
        path: the directory.
        driver: IREE's CPU driver: ``"local-task"`` runs a call's work on a
            pool of threads, one per core (for large models on idle cores);
            ``"local-sync"`` on the calling thread (lower latency for small
            models, and on a busy machine).

    Raises:
        ValueError: ``driver`` is neither.
        ArtifactError: the manifest is missing or damaged, or a file is
            missing, extra, truncated or changed (the message names it).
        TargetMismatchError: the modules were compiled for another
            architecture, or for CPU features this machine lacks.
        MissingExtraError: IREE's runtime is not installed.
        OSError: ``path`` is not a readable directory.
    """
    from ..adapters import iree_runtime

    if driver not in iree_runtime.DRIVERS:
        raise ValueError(f"driver={driver!r} is not one of IREE's CPU drivers {iree_runtime.DRIVERS}")
    root = Path(path)
    entries = directory_entries(root)
    if entries.get(MANIFEST_FILE, -1) < 0:
        raise ArtifactError(f"{root} is not a directory of IREE modules: its file {MANIFEST_FILE} is missing")
    manifest = IreeManifest.from_json((root / MANIFEST_FILE).read_bytes())
    check_listing(manifest, entries)
    check_runs_here(manifest.target, str(root), iree_runtime.host_arch(), iree_runtime.host_cpu_features())
    modules = {m.file: (root / m.file).read_bytes() for f in manifest.functions for m in f.modules}
    check_digests(manifest, list(modules), sha256_many([memoryview(b) for b in modules.values()]))
    weights = None if manifest.params_tree is None else \
        read_weights(root, manifest.weights, manifest.weights_header_sha256)
    runtime = iree_runtime.IreeRuntime(manifest, modules, None if weights is None else weights.buffer,
                                       str(root), driver)
    params = {} if weights is None else {w.name: weights.array(w.name, w.data_dtype) for w in manifest.weights}
    return IreeModel(manifest, runtime, params)
