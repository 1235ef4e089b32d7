"""Loading a converted directory (``jaxport.load_converted``): any directory jaxport converted, ready to call, one model type for every target.

Loading reads the manifest (no runtime yet), checks the directory against
it (exactly its files, each of the recorded size and digest; the weights
file by its header's digest and each weight's), runs the target's host
check (IREE's CPU features and triple, a SavedModel's platforms), and only
then opens the target's runtime, which imports neither JAX nor jaxlib.
Every call is checked in front of the runtime (:class:`ConvertedCall`), so
one bad call gets the same error and message on every target.
"""

from __future__ import annotations

import os
import types
from dataclasses import dataclass
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jaxport.adapters.storage.checked_directory import check_digests, listing
from jaxport.domain.ports import KnownFiles
from jaxport.domain.checked_directory import check_listing
from jaxport.domain.converted.manifest import (
    ConvertedFunction, ConvertedManifest, Variant, manifest_format
)
from jaxport.domain.errors import ArtifactError, UsageError
from jaxport.domain.calls.front import call_checker, flatten_call, unflatten_results
from jaxport.domain.targets.registry import TARGETS, TargetEntry, target
from jaxport.adapters.storage.bundle_dir import read_weights
from jaxport.adapters.storage.path_kind import manifest_places, path_kind
from jaxport.domain.path_kind import CONVERTED_FORMATS, PathKind, require
from jaxport.application import target_adapters
from jaxport.application.conversion.verify_directory import DirectoryVerification, DirectoryVerifier

if TYPE_CHECKING:  # the ports only type: loading a directory creates none of their classes
    from jaxport.domain.targets.ports import TargetRuntime


def manifest_path_of(path: str | os.PathLike[str]) -> str | None:
    """The path (relative to ``path``) of the converted-directory manifest there, or None."""
    root = Path(path)
    for candidate in manifest_places():
        file = root / candidate
        if file.is_file() and manifest_format(file.read_bytes()) in CONVERTED_FORMATS:
            return candidate
    return None


def is_converted(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a directory that jaxport converted (for any target)."""
    return path_kind(path) is PathKind.CONVERTED


def read_converted(path: str | os.PathLike[str]) -> tuple[ConvertedManifest, TargetEntry]:
    """The manifest of the converted directory at ``path`` and its target, its listing checked.

    Raises:
        ArtifactError: no manifest, a damaged one, an older or newer format, or
            a file missing, extra, truncated or longer than recorded.
        OSError: ``path`` is not a readable directory.
    """
    manifest, entry, _ = _read_converted(Path(path))
    return manifest, entry


def _read_converted(root: Path) -> tuple[ConvertedManifest, TargetEntry, bytes]:
    """:func:`read_converted`, and the manifest's bytes."""
    require(path_kind(root), root, PathKind.CONVERTED)
    where = manifest_path_of(root)
    if where is None:
        raise ArtifactError(f"{root} is not a directory that jaxport converted: it has no manifest.json "
                            f"(nor {', '.join(e.manifest_path for e in TARGETS.values() if e.manifest_dir)})")
    data = (root / where).read_bytes()
    manifest = ConvertedManifest.from_json(data)
    try:
        entry = target(manifest.target)
    except UsageError as exc:
        raise ArtifactError(f"{root}: {exc} (a newer jaxport wrote it?)") from None
    if entry.manifest_path != where:
        raise ArtifactError(f"{root}: a {entry.name} directory keeps its manifest at {entry.manifest_path}")
    check_listing(manifest.files, listing(root), where, "directory", folders=True)
    return manifest, entry, data


def _check_files(root: Path, manifest: ConvertedManifest, known: KnownFiles) -> Mapping[str, Any]:
    """Checks every file's digest (the weights file: its header's and each weight's); the weights' views.

    A file found equal to its record before and unchanged since is not hashed
    again (:mod:`jaxport.adapters.storage.checked_directory`).
    """
    weights_file = manifest.weights.file if manifest.weights is not None else ""
    check_digests(root, manifest.files, [n for n in manifest.files if n != weights_file], "directory", known)
    if manifest.weights is None or not weights_file:
        return {}
    stored = read_weights(root, manifest.weights.leaves, manifest.weights.header_sha256, known)
    return {w.name: stored.array(w.name, w.data_dtype) for w in manifest.weights.leaves}


class ConvertedCall:
    """One function of a converted directory: ``model["predict"](x)``.

    Each call is checked first (pytree, dtypes, ranks, shapes, dimension
    variables, constraints, the compiled variant) with the errors of
    :mod:`jaxport.errors`; the runtime only runs. Results are NumPy arrays in
    the function's result pytree (a custom node comes back as a tuple).
    """

    def __init__(self, function: ConvertedFunction, runtime: TargetRuntime) -> None:
        self.function = function
        self.runtime = runtime
        self.signature = function.signature
        self._check = call_checker(self.signature)
        self.__name__ = function.name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The function's result for ``args`` and ``kwargs``.

        Raises:
            TreeMismatchError, RankMismatchError, DtypeMismatchError,
            ShapeMismatchError, ShapeAssertionError, UncompiledSizeError: the
                call does not match the export or no variant was made for its sizes.
            JaxportError: the runtime failed (the subclass says why).
        """
        leaves = flatten_call(self.signature, args, kwargs)
        return unflatten_results(self.signature, self.run_flat(leaves))

    def call_flat(self, leaves: list[Any]) -> Any:
        """The result pytree for the caller's flat arrays, checked as :meth:`__call__` does."""
        return unflatten_results(self.signature, self.run_flat(leaves))

    def run_flat(self, leaves: list[Any]) -> list[Any]:
        """The flat results for the caller's flat arrays, checked as :meth:`__call__` does."""
        return list(self.runtime.run(self.function.name, self.variant_of(leaves), leaves))

    def variant_of(self, leaves: list[Any]) -> Variant:
        """The variant that runs the caller's flat arrays, checked as :meth:`__call__` does."""
        return self.function.variant_for(self._check.check(leaves))

    def __repr__(self) -> str:
        return f"ConvertedCall({self.function.name!r})"


class ConvertedModel(Mapping[str, ConvertedCall]):
    """The functions of a converted directory, the same type for every target.

    Attributes:
        target: the target's name (``"savedmodel"``, ``"iree"``).
        functions: names -> what was converted of each (signature, variants).
        params: the weights by key path (``"dense/w"``): read-only NumPy views
            of the weights file where the directory keeps one (IREE, ONNX); where
            the target holds them in its own form, what its runtime reads back (a
            SavedModel's variables); empty where they are constants of each model (LiteRT).
        manifest: the directory's manifest.
    """

    def __init__(self, manifest: ConvertedManifest, runtime: TargetRuntime, params: Mapping[str, Any]) -> None:
        self.manifest = manifest
        self.target = manifest.target
        self.functions: Mapping[str, ConvertedFunction] = types.MappingProxyType(
            {f.name: f for f in manifest.functions})
        self.params: Mapping[str, Any] = types.MappingProxyType(dict(params))
        self._calls = {f.name: ConvertedCall(f, runtime) for f in manifest.functions}

    def __getitem__(self, name: str) -> ConvertedCall:
        try:
            return self._calls[name]
        except KeyError:
            raise KeyError(f"The directory has no function {name!r}; it has {sorted(self._calls)}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._calls)

    def __len__(self) -> int:
        return len(self._calls)

    def __repr__(self) -> str:
        return f"ConvertedModel(target={self.target!r}, functions={list(self._calls)})"


@dataclass(frozen=True, slots=True)
class ConvertedLoader:
    """Loads and verifies converted directories (:func:`jaxport.load_converted`, ``jaxport check DIR``).

    The composition root builds the process's one (:func:`jaxport.application.wiring.converted_loader`);
    a test makes its own on its own ports.

    Attributes:
        known: the files whose digests were checked before (unchanged since, they are not hashed again).
        verifier: what verifies a directory in an isolated child, its verdicts remembered.
    """

    known: KnownFiles
    verifier: DirectoryVerifier

    def load(self, path: str | os.PathLike[str], *, verify: bool = True, **runtime_options: Any) -> ConvertedModel:
        """:func:`jaxport.load_converted`, on this loader's ports."""
        root = Path(path)
        manifest, entry, params, data = _checked(root, self.known)
        loader = target_adapters.runtime(entry)
        if verify:
            self.verifier.verify(root, data, manifest, runtime_options).raise_if_failed(str(root))
        runtime = loader(str(root), manifest, runtime_options)
        read_back = None if params else getattr(runtime, "params", None)
        if callable(read_back):  # a WeightsRuntime (domain.targets.ports): its target keeps the weights
            params = read_back()
        return ConvertedModel(manifest, runtime, params)

    def verify(self, path: str | os.PathLike[str], **runtime_options: Any) -> DirectoryVerification:
        """:func:`~jaxport.application.conversion.api.verify_converted`, on this loader's ports."""
        manifest, _, _, data = _checked(Path(path), self.known)
        return self.verifier.verify(path, data, manifest, runtime_options)


def _checked(root: Path, known: KnownFiles) -> tuple[ConvertedManifest, TargetEntry, Mapping[str, Any], bytes]:
    """The manifest, the target, the weights' views and the manifest's bytes of ``root``: the files
    checked against the manifest, the target against this machine."""
    manifest, entry, data = _read_converted(root)
    params = _check_files(root, manifest, known)
    facts = target_adapters.host_facts(entry) if entry.plan.check_host is not None else None
    if entry.plan.check_host is not None and facts is not None:
        entry.plan.check_host(manifest.target_details, facts(), str(root))
    return manifest, entry, params, data
