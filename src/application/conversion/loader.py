"""Loading the directories jaxport wrote: :class:`ConvertedLoader`, behind ``jaxport.load_converted``.

Loading opens the directory once (its manifest parsed, its listing checked:
:mod:`jaxport.domain.opened_directory`), checks the files its runtime opens by
path and the weights file (by its header's digest and each weight's), runs
the target's host check (IREE's CPU features and triple, a SavedModel's
platforms), verifies it in an isolated child, and only then opens the
target's runtime, which imports neither JAX nor jaxlib. A bundle is loaded on
JAX through the bundles' loader, behind the same call front.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from jaxport.domain.converted.manifest import ConvertedManifest
from jaxport.domain.errors import ArtifactError
from jaxport.domain.opened_directory import Directories, OpenedDirectory
from jaxport.domain.path_kind import PathKind
from jaxport.domain.targets.registry import target
from jaxport.application.conversion.jax_model import jax_model
from jaxport.application.conversion.model import ConvertedModel
from jaxport.application.conversion.verify_directory import DirectoryVerification, DirectoryVerifier
from jaxport.application.target_adapters import TargetAdapters, imported

if TYPE_CHECKING:  # types only: loading a directory imports neither JAX nor the conversion's records
    from jaxport.adapters.jax.bundles.loaded import Bundle
    from jaxport.domain.targets.ports import TargetRuntime

_R = TypeVar("_R", bound="TargetRuntime")


@dataclass(frozen=True, slots=True)
class ConvertedLoader:
    """Loads and verifies converted directories (:func:`jaxport.load_converted`, ``jaxport check DIR``), and
    loads any directory jaxport wrote behind the call front (:meth:`model`: ``jaxport serve``, the engines).

    The composition root builds the process's one (:func:`jaxport.application.wiring.converted_loader`);
    a test makes its own on its own ports.

    Attributes:
        directories: opens a directory once (the files' digests checked before are remembered).
        verifier: what verifies a directory in an isolated child, its verdicts remembered.
        targets: each target's adapters, by name: a directory's runtime comes from its target's entry.
        bundles: loads a bundle opened already, on JAX.
    """

    directories: Directories
    verifier: DirectoryVerifier
    targets: Mapping[str, TargetAdapters[Any]]
    bundles: Callable[[OpenedDirectory[Any]], Bundle]

    def open(self, path: str | os.PathLike[str], *wanted: PathKind) -> OpenedDirectory[Any]:
        """The directory at ``path``, opened: one of ``wanted`` (default: a bundle or a converted directory;
        raises as :meth:`Directories.open <jaxport.domain.opened_directory.Directories.open>`)."""
        return self.directories.open(path, *(wanted or (PathKind.BUNDLE, PathKind.CONVERTED)))

    def model(self, directory: OpenedDirectory[Any], *, generating: bool = False,
              **runtime_options: Any) -> ConvertedModel:
        """The functions of ``directory`` on its runtime: a bundle's on JAX (its weights bound), a converted
        directory's on its target's (:meth:`load`, verified; ``generating``: with the runtime options that its
        target's generation runs with, where the caller gives none)."""
        if directory.kind is PathKind.BUNDLE:
            return jax_model(self.bundles(directory), directory)
        wanted = self.targets[directory.manifest.target].generation_options if generating else {}
        return self.load(directory, **{**wanted, **runtime_options})

    def load(self, source: str | os.PathLike[str] | OpenedDirectory[ConvertedManifest], *, verify: bool = True,
             **runtime_options: Any) -> ConvertedModel:
        """:func:`jaxport.load_converted` of a path, or of the directory ``source`` opened already (its files
        are checked once however often it is loaded), on this loader's ports."""
        directory = self._checked(source, every_file=False)
        return _loaded(directory, self.targets[directory.manifest.target], runtime_options,
                       self.verifier if verify else None)

    def verify(self, path: str | os.PathLike[str] | OpenedDirectory[ConvertedManifest],
               **runtime_options: Any) -> DirectoryVerification:
        """:func:`~jaxport.application.conversion.api.verify_converted`, on this loader's ports."""
        directory = self._checked(path, every_file=True)
        return self.verifier.verify(directory, runtime_options)

    def _checked(self, source: str | os.PathLike[str] | OpenedDirectory[ConvertedManifest], *,
                 every_file: bool) -> OpenedDirectory[ConvertedManifest]:
        """``source``, opened, its files checked (those its runtime may open by path; with ``every_file``, those
        jaxport reads itself too), then its target against this machine."""
        directory = self.open(source, PathKind.CONVERTED) if isinstance(source, (str, os.PathLike)) else source
        if every_file:
            directory.check_every_file()
        directory.opened_by_path()
        registered = target(directory.manifest.target)
        facts = self.targets[registered.name].host_facts
        if registered.plan.check_host is not None and facts is not None:
            registered.plan.check_host(directory.manifest.target_details,
                                       imported(registered, facts, "The runtime of")(), directory.root)
        return directory


def _loaded(directory: OpenedDirectory[ConvertedManifest], entry: TargetAdapters[_R], options: Mapping[str, Any],
            verifier: DirectoryVerifier | None) -> ConvertedModel:
    """The model of ``directory`` (checked) on the runtime that ``entry`` opens (after ``verifier`` verified the
    directory with ``options``, where given), its steps' runner bound to that runtime."""
    manifest = directory.manifest
    registered = target(manifest.target)
    if entry.runtime is None:
        raise ArtifactError(f"{directory.root}: no runtime opens a directory converted for {registered.name}")
    open_runtime = imported(registered, entry.runtime, "The runtime of")
    if verifier is not None:
        verifier.verify(directory, options).raise_if_failed(directory.root)
    runtime = open_runtime(directory.root, manifest, options)
    stored = directory.weights()
    params: Mapping[str, Any] = {} if stored is None or manifest.weights is None else {
        w.name: stored.array(w.name, w.data_dtype) for w in manifest.weights.leaves}
    read_back = None if params else getattr(runtime, "params", None)
    if callable(read_back):  # a WeightsRuntime (domain.targets.ports): its target keeps the weights
        params = read_back()
    return ConvertedModel(manifest, runtime, params, directory=directory, options=options,
                          steps=None if entry.steps is None else functools.partial(entry.steps, runtime))
