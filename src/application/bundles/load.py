"""Loading a bundle: :class:`BundleLoader` checks every file before anything is made."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jaxport.adapters.jax.bundles.loaded import Bundle
from jaxport.adapters.jax.bundles.weights import (
    Mesh, placed_leaves, restore_weight, weight_placements, weight_shardings
)
from jaxport.adapters.jax.exported.exported import Exported
from jaxport.adapters.jax.trees.registry import PytreeSerializationRegistry
from jaxport.adapters.storage.bundle_dir import read_function, read_manifest, read_weights
from jaxport.domain.ports import KnownFiles
from jaxport.application.export.verifier import ArtifactVerifier, read_exported
from jaxport.domain.bundle.manifest import Manifest
from jaxport.domain.errors import ArtifactError, BundleMismatchError, ShardingMismatchError


@dataclass(frozen=True, slots=True)
class BundleLoader:
    """Loads bundles (:func:`jaxport.load_bundle`).

    The composition root builds the process's one (:func:`jaxport.application.wiring.bundle_loader`);
    a test makes its own on its own ports.

    Attributes:
        known: the files whose digests were checked before (unchanged since, they are not hashed again).
        registry: the pytree registry the functions and the weights' tree are read with.
        verifier: what verifies each function's artifact (with ``verify``).
    """

    known: KnownFiles
    registry: PytreeSerializationRegistry
    verifier: ArtifactVerifier

    def load(self, path: str | os.PathLike[str], *, params: Any = None, mesh: Mesh | None = None,
             verify: bool = True, allowed_custom_calls: Iterable[str] = ()) -> Bundle:
        """:func:`jaxport.load_bundle`, on this loader's ports."""
        root = Path(path)
        manifest = read_manifest(root)
        functions: dict[str, Exported] = {}
        for entry in manifest.functions:
            blob = read_function(root, manifest, entry.file)
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
        leaves = (_read_weights(root, manifest, where, self.known) if params is None
                  else placed_leaves(manifest, params, where))
        tree = self.registry.to_treedef(manifest.params_tree, leaves)
        return Bundle(manifest, functions, tree.unflatten(leaves), where)


def _read_weights(root: Path, manifest: Manifest, where: tuple[Any, ...], known: KnownFiles) -> list[Any]:
    """The weights, memory-mapped, after checking the header and every weight's digest
    (:func:`~jaxport.adapters.storage.bundle_dir.read_weights`: a file checked before and unchanged
    since is not hashed again)."""
    weights = read_weights(root, manifest.weights, manifest.weights_header_sha256, known)
    return [restore_weight(w, weights.array(w.name, w.data_dtype), s)
            for w, s in zip(manifest.weights, where, strict=True)]