"""IREE's runtime behind the runtime port: compiled ``.vmfb`` modules called on NumPy arrays.

The only module that imports ``iree.runtime`` (the ``iree-base-runtime``
package of the ``jaxport[iree]`` extra); it needs neither JAX nor IREE's
compiler. Each compiled module gets its own context on first use, with the
weights' parameters: IREE reads them from the weights file's memory, mapped
once for every module, and keeps them on the device (host memory, for the
CPU) for the context's life, so a call passes only the caller's arrays.
The bytes given here have been checked against the directory's digests;
IREE reads exactly those bytes, not the files again. Loading has IREE read
every module (it verifies the bytecode) and finds its ``main`` before the
first call. IREE's errors become jaxport's here, in :func:`_iree_errors`:
an ``ArtifactError`` naming the directory and the file for whatever fails
while a module or its function is opened (at load, or at the function's
first call, which makes its context and function object), an
``ArtifactCallError`` for a call that fails; a bad option is a ``UsageError``.
"""

from __future__ import annotations

import functools
import os
import platform
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import numpy as np

from jaxport.domain.converted.manifest import ConvertedManifest, Variant
from jaxport.domain.errors import ArtifactError, MissingExtraError, TargetMismatchError, UsageError
from jaxport.domain.targets.iree import PARAMETER_SCOPE, target_of
from jaxport.adapters.engine_errors import engine_errors
from jaxport.adapters.storage.safetensors_file import SafetensorsFile

try:
    import iree.runtime as rt
    from iree import _runtime_libs  # where iree-base-runtime keeps its native tools
except ImportError as exc:  # the extra is not installed
    raise MissingExtraError("IREE's runtime (iree-base-runtime)", "iree", exc) from exc

#: IREE's CPU drivers: ``local-task`` runs each call's work on a pool of threads (one per core);
#: ``local-sync`` runs it on the calling thread, without the pool's hand-offs.
DRIVERS = ("local-task", "local-sync")


def load(root: str, manifest: ConvertedManifest, options: Mapping[str, Any]) -> IreeRuntime:
    """The runtime of an IREE directory whose files were checked (the registry's runtime loader).

    Options: ``driver``, one of :data:`DRIVERS`.

    Raises:
        UsageError: an unknown option or driver.
        ArtifactError: IREE cannot read a module or the weights, or a module has no ``main``.
    """
    unknown = sorted(set(options) - {"driver"})
    if unknown:
        raise UsageError(f"IREE's runtime takes the option 'driver' only, not {unknown}")
    driver = str(options.get("driver", DRIVERS[0]))
    if driver not in DRIVERS:
        raise UsageError(f"driver={driver!r} is not one of IREE's CPU drivers {DRIVERS}")
    modules = {v.file: Path(root, v.file).read_bytes()
               for f in manifest.functions for v in f.variants}
    weights = None
    if manifest.weights is not None and manifest.weights.file:
        weights = SafetensorsFile(Path(root, manifest.weights.file)).buffer  # checked by the loader
    return IreeRuntime(manifest, modules, weights, root, driver)


def _iree_errors(function: str | None = None, *, file: str = "",
                 mismatch: TargetMismatchError | None = None) -> AbstractContextManager[None]:
    """IREE's errors (its status as ``RuntimeError``, ``ValueError``, ``IndexError``..., nanobind's
    own too) as jaxport's, IREE's words kept (:func:`~jaxport.adapters.engine_errors.engine_errors`).

    Args:
        function: the function being called; None while a directory's files are read.
        file: the file (or directory) being read, for the message.
        mismatch: what to raise when IREE finds a module ``INCOMPATIBLE`` with this machine.

    Raises:
        TargetMismatchError: ``mismatch``, when IREE says so.
        ArtifactError: reading or opening ``file`` failed.
        ArtifactCallError: calling ``function`` failed.
    """
    def opening(exc: Exception) -> Exception:
        if mismatch is not None and "INCOMPATIBLE" in str(exc):
            return mismatch
        return ArtifactError(f"IREE cannot open {file}: {type(exc).__name__}: {exc}")

    return engine_errors(function, opening)


def host_facts() -> dict[str, Any]:
    """This machine's architecture and CPU features, for the IREE plan's host check."""
    return {"arch": host_arch(), "cpu_features": host_cpu_features()}


class IreeRuntime:
    """Runs the variants of one converted directory (a :class:`~jaxport.domain.targets.ports.TargetRuntime`).

    Args:
        manifest: the directory's manifest.
        modules: each compiled module's file name -> its bytes (checked).
        weights: the weights file's bytes (checked; a memory map), or None
            when no function reads weights.
        where: the directory, for messages.
        driver: one of :data:`DRIVERS`.
    """

    name = "iree"

    def __init__(self, manifest: ConvertedManifest, modules: Mapping[str, bytes],
                 weights: Any | None, where: str, driver: str = DRIVERS[0]) -> None:
        self._manifest = manifest
        self._where = where
        with _iree_errors(file=where):
            self._config = rt.Config(driver)
        instance = self._config.vm_instance
        self._parameters: Any = None
        if weights is not None:
            weights_file = manifest.weights.file if manifest.weights is not None else ""
            with _iree_errors(file=os.path.join(where, weights_file)):
                index = rt.ParameterIndex()
                index.load_from_file_handle(rt.FileHandle.wrap_memory(weights), "safetensors")
                self._parameters = rt.create_io_parameters_module(
                    instance, index.create_provider(scope=PARAMETER_SCOPE))
        self._modules: dict[str, Any] = {}
        for file, data in modules.items():
            with _iree_errors(file=os.path.join(where, file)):
                self._modules[file] = rt.VmModule.copy_buffer(instance, data)  # IREE verifies the bytecode
                if self._modules[file].lookup_function("main") is None:
                    raise ArtifactError(f"{os.path.join(where, file)} has no function 'main': it is not a "
                                        "module that jaxport compiled")
        self._loaded: dict[str, Callable[..., Any]] = {}
        self._lock = threading.Lock()

    def run(self, function: str, variant: Variant, args: Sequence[Any]) -> list[Any]:
        """The results of ``variant`` of ``function``, as NumPy arrays.

        Raises:
            TargetMismatchError: IREE finds the module incompatible with this machine.
            ArtifactCallError: IREE failed to run it (the message keeps IREE's).
        """
        with _iree_errors(function):
            return [np.asarray(r.to_host()) for r in self.run_on_device(function, variant, args)]

    def run_on_device(self, function: str, variant: Variant, args: Sequence[Any]) -> list[Any]:
        """The results of ``variant`` of ``function`` as IREE's ``DeviceArray``\\ s, none copied to
        the host; an argument that is one already is passed as it is (its buffer, not a copy).

        Raises:
            TargetMismatchError: IREE finds the module incompatible with this machine.
            ArtifactCallError: IREE failed to run it (the message keeps IREE's).
        """
        call = self._function(function, variant.file)
        with _iree_errors(function):
            results = call(*[a if isinstance(a, rt.DeviceArray) else np.asarray(a, order="C") for a in args])
            if results is None:
                return []
            return list(results) if isinstance(results, tuple) else [results]

    def _function(self, name: str, file: str) -> Callable[..., Any]:
        with self._lock:
            loaded = self._loaded.get(file)
            if loaded is None:
                loaded = self._load(name, file)
                self._loaded[file] = loaded
            return loaded

    def _load(self, name: str, file: str) -> Callable[..., Any]:
        """``main`` of the module in ``file``, in a new context (its parameters read there): IREE's
        function object, which reads the function's reflection, made here so that its errors are
        jaxport's (an ``ArtifactError`` naming the file: the module, not the call, is at fault).

        Raises:
            TargetMismatchError: IREE finds the module incompatible with this machine.
            ArtifactError: IREE cannot make the module's context or its function.
        """
        module = self._modules[file]
        extra = [] if self._parameters is None else [self._parameters]
        where = os.path.join(self._where, file)
        mismatch = TargetMismatchError(where, str(target_of(self._manifest.target_details)), host_arch())
        with _iree_errors(file=where, mismatch=mismatch):
            context = rt.SystemContext(vm_modules=[*extra, module], config=self._config)
            main: Callable[..., Any] = context.modules[module.name]["main"]
        return main


def host_arch() -> str:
    """This machine's architecture, as Python names it (``"x86_64"``, ``"arm64"``)."""
    return platform.machine()


@functools.cache
def host_cpu_features() -> dict[str, bool]:
    """The CPU features that IREE's ``iree-cpuinfo`` reports for this machine (empty if it cannot)."""
    tool = os.path.join(list(_runtime_libs.__path__)[0], "iree-cpuinfo")
    try:
        done = subprocess.run([tool], capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError):
        return {}
    features: dict[str, bool] = {}
    for line in done.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1] in ("0", "1"):
            features[parts[0]] = parts[1] == "1"
    return features
