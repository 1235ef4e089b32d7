"""Reading what an artifact or a bundle says about itself, without importing JAX."""

from __future__ import annotations

import os
from pathlib import Path
from typing import overload

from ..adapters.bundle_dir import read_function, read_manifest
from ..adapters.flatbuffers_codec import decode_artifact
from ..domain.artifact_info import ArtifactInfo
from ..domain.bundle_info import BundleInfo
from ..domain.errors import ArtifactError


@overload
def inspect(blob_or_path: bytes | bytearray | memoryview) -> ArtifactInfo: ...


@overload
def inspect(blob_or_path: str | os.PathLike[str]) -> ArtifactInfo | BundleInfo: ...


def inspect(blob_or_path: bytes | bytearray | memoryview | str | os.PathLike[str]) -> ArtifactInfo | BundleInfo:
    """The summary of an artifact given as bytes or a file path, or of a bundle directory.

    Loads neither JAX nor jaxlib, so it takes milliseconds. For a bundle, it
    checks the directory against the manifest (files and sizes) and each
    function file's digest, and reads the weights' table from the manifest
    (the weights file itself is not read).

    Raises:
        ArtifactError: the bytes are not a valid artifact, or the bundle is damaged.
        OSError: the file cannot be read.
    """
    if isinstance(blob_or_path, (str, os.PathLike)):
        if Path(blob_or_path).is_dir():
            return inspect_bundle(blob_or_path)
        blob: bytes | bytearray | memoryview = Path(blob_or_path).read_bytes()
    else:
        blob = blob_or_path
    return ArtifactInfo.of(decode_artifact(blob))


def inspect_bundle(path: str | os.PathLike[str]) -> BundleInfo:
    """The summary of the bundle directory at ``path`` (see :func:`inspect`)."""
    manifest = read_manifest(path)
    artifacts = {}
    for entry in manifest.functions:
        try:
            artifacts[entry.name] = ArtifactInfo.of(decode_artifact(read_function(path, manifest, entry.file)))
        except ArtifactError as exc:
            raise ArtifactError(f"{entry.file}: {exc}") from exc
    return BundleInfo.of(os.fspath(path), manifest, artifacts)
