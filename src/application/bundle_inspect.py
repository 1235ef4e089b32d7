"""Reading what a bundle says about itself, without importing JAX."""

from __future__ import annotations

import os

from ..adapters.bundle_dir import read_function, read_manifest
from ..adapters.flatbuffers_codec import decode_artifact
from ..domain.artifact_info import ArtifactInfo
from ..domain.bundle_info import BundleInfo, weights_argument
from ..domain.errors import ArtifactError


def inspect_bundle(path: str | os.PathLike[str]) -> BundleInfo:
    """The summary of the bundle directory at ``path``.

    Checks the directory against the manifest (files and sizes) and each
    function file's digest; the weights' table comes from the manifest (the
    weights file itself is not read). Each function's brief signature shows
    the weights, wherever they occur, as ``<params: N arrays>``.

    Raises:
        ArtifactError: the bundle is damaged.
        OSError: the directory cannot be read.
    """
    manifest = read_manifest(path)
    records = {}
    for entry in manifest.functions:
        try:
            records[entry.name] = decode_artifact(read_function(path, manifest, entry.file))
        except ArtifactError as exc:
            raise ArtifactError(f"{entry.file}: {exc}") from exc
    # Every function that takes the weights takes the same tree (save_bundle checks it).
    weights = next((weights_argument(records[e.name]) for e in manifest.functions if e.takes_params), None)
    artifacts = {name: ArtifactInfo.of(record, named=weights) for name, record in records.items()}
    return BundleInfo.of(os.fspath(path), manifest, artifacts)
