"""Loading a bundle: :class:`BundleLoader` checks every file before anything is made."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from jaxport.adapters.jax.bundles.loaded import Bundle
from jaxport.adapters.jax.bundles.weights import (
    Mesh, placed_leaves, restore_weight, weight_placements, weight_shardings
)
from jaxport.adapters.jax.exported.exported import Exported
from jaxport.adapters.jax.trees.registry import PytreeSerializationRegistry
from jaxport.application.export.verifier import ArtifactVerifier, read_exported
from jaxport.domain.bundle.manifest import Manifest
from jaxport.domain.errors import ArtifactError, BundleMismatchError, ShardingMismatchError
from jaxport.domain.opened_directory import Directories, OpenedDirectory
from jaxport.domain.path_kind import PathKind


@dataclass(frozen=True, slots=True)
class BundleLoader:
    """Loads bundles (:func:`jaxport.load_bundle`).

    The composition root builds the process's one (:func:`jaxport.application.wiring.bundle_loader`);
    a test makes its own on its own ports.

    Attributes:
        directories: opens a bundle once (its files checked as they are read, the weights' digests
            remembered: a file checked before and unchanged since is not hashed again).
        registry: the pytree registry the functions and the weights' tree are read with.
        verifier: what verifies each function's artifact (with ``verify``).
    """

    directories: Directories
    registry: PytreeSerializationRegistry
    verifier: ArtifactVerifier

    def load(self, source: str | os.PathLike[str] | OpenedDirectory[Manifest], *, params: Any = None,
             mesh: Mesh | None = None, verify: bool = True, allowed_custom_calls: Iterable[str] = ()) -> Bundle:
        """:func:`jaxport.load_bundle` of a path, or of the bundle ``source`` opened already, on this loader's ports."""
        directory = self.directories.open(source, PathKind.BUNDLE) if isinstance(source, (str, os.PathLike)) \
            else source
        manifest = directory.manifest
        functions: dict[str, Exported] = {}
        for entry in manifest.functions:
            blob = directory.read(entry.file)
            try:
                functions[entry.name] = read_exported(blob, self.registry, self.verifier if verify else None,
                                                      allowed_custom_calls)
            except ArtifactError as exc:
                raise ArtifactError(f"{entry.file}: {exc}") from exc
        takes = {e.name: e.takes_params for e in manifest.functions}
        try:
            shardings = weight_shardings(functions, takes, manifest.params_tree, manifest.weights)
        except (BundleMismatchError, ShardingMismatchError) as exc:
            raise ArtifactError(f"The bundle's functions do not match its manifest: {exc}") from exc
        where = weight_placements(shardings, mesh)
        if params is None:
            stored = directory.weights()
            assert stored is not None  # a bundle always has its weights file
            leaves = [restore_weight(w, stored.array(w.name, w.data_dtype), s)
                      for w, s in zip(manifest.weights, where, strict=True)]
        else:
            leaves = placed_leaves(manifest, params, where)
        tree = self.registry.to_treedef(manifest.params_tree, leaves)
        return Bundle(manifest, functions, tree.unflatten(leaves), where)
