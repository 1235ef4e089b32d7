"""Loading a bundle: :func:`load_bundle` checks every file before anything is made."""

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
from jaxport.adapters.jax.trees.registry import PytreeSerializationRegistry, default_registry
from jaxport.adapters.storage.bundle_dir import read_function, read_manifest, read_weights
from jaxport.adapters.storage.checked_directory import KnownFiles
from jaxport.application import wiring
from jaxport.application.export.serialization import deserialize
from jaxport.domain.bundle.manifest import Manifest
from jaxport.domain.errors import ArtifactError, BundleMismatchError, ShardingMismatchError


def load_bundle(path: str | os.PathLike[str], *, params: Any = None, mesh: Mesh | None = None,
                verify: bool = True, allowed_custom_calls: Iterable[str] = ()) -> Bundle:
    """Loads the bundle that :func:`jaxport.save_bundle` wrote at ``path``.

    Every file is checked before the :class:`Bundle` is made (its size and
    digest, the manifest's format version, the weights' header against the
    manifest, each function against the weights): a damaged bundle raises,
    it never loads in part. The weights file is read once, memory-mapped;
    on one CPU device the weights are used in place, without a copy.

    Args:
        path: the bundle directory.
        params: weights to use instead of the bundle's (checked like
            :meth:`Bundle.with_params`); the weights file is then not read.
        mesh: a mesh of the axes the functions were exported with: each
            weight is placed with its recorded sharding over it (replicated
            where none is recorded), in one process or across the processes
            of JAX's distributed runtime (each reads only its devices'
            slices). Without a mesh, weights with recorded shardings go to
            this process's first devices, the others to the default device.
        verify: verify each function's artifact as :func:`jaxport.load` does
            (its modules parsed in a separate process, ``main``'s signature and
            custom calls checked); verdicts are remembered per digest.
        allowed_custom_calls: custom-call targets to accept besides those JAX
            guarantees stable; the artifacts' own disabled checks do not count.

    Raises:
        ArtifactError: a file is missing, extra, truncated or changed, a
            weight's dtype or shape differs from the manifest, the manifest
            is of a newer format; the message names the file and the key.
        BundleMismatchError: ``params`` differ from the bundle's weights.
        MeshMismatchError: ``mesh``'s axes differ from the recorded ones.
        OSError: ``path`` is not a readable directory.
    """
    loader = BundleLoader(wiring.known_files(), default_registry())
    return loader.load(path, params=params, mesh=mesh, verify=verify, allowed_custom_calls=allowed_custom_calls)


@dataclass(frozen=True, slots=True)
class BundleLoader:
    """Loads bundles (:func:`load_bundle`).

    :func:`load_bundle` makes it from the composition root's objects; a test makes its own on its own ports.

    Attributes:
        known: the files whose digests were checked before (unchanged since, they are not hashed again).
        registry: the pytree registry the functions and the weights' tree are read with.
    """

    known: KnownFiles
    registry: PytreeSerializationRegistry

    def load(self, path: str | os.PathLike[str], *, params: Any = None, mesh: Mesh | None = None,
             verify: bool = True, allowed_custom_calls: Iterable[str] = ()) -> Bundle:
        """:func:`load_bundle`, on this loader's ports."""
        root = Path(path)
        manifest = read_manifest(root)
        functions: dict[str, Exported] = {}
        for entry in manifest.functions:
            blob = read_function(root, manifest, entry.file)
            try:
                functions[entry.name] = deserialize(blob, self.registry, verify=verify,
                                                    allowed_custom_calls=allowed_custom_calls)
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