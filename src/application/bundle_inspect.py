"""Reading what a bundle says about itself, without importing JAX."""

from __future__ import annotations

import os

from ..adapters.bundle_dir import read_function, read_manifest
from ..adapters.flatbuffers_codec import decode_artifact
from ..domain.artifact_info import ArtifactInfo
from ..domain.bundle_info import BundleInfo
from ..domain.errors import ArtifactError


def inspect_bundle(path: str | os.PathLike[str]) -> BundleInfo:
    """The summary of the bundle directory at ``path``.

    Checks the directory against the manifest (files and sizes) and each
    function file's digest; the weights' table comes from the manifest (the
    weights file itself is not read).

    Raises:
        ArtifactError: the bundle is damaged.
        OSError: the directory cannot be read.
    """
    manifest = read_manifest(path)
    artifacts = {}
    for entry in manifest.functions:
        try:
            artifacts[entry.name] = ArtifactInfo.of(decode_artifact(read_function(path, manifest, entry.file)))
        except ArtifactError as exc:
            raise ArtifactError(f"{entry.file}: {exc}") from exc
    return BundleInfo.of(os.fspath(path), manifest, artifacts)
