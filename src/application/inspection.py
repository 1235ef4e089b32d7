"""``jaxport.inspect``: what an artifact or a bundle says about itself, read without importing JAX."""

from __future__ import annotations

import os
from typing import overload

from jaxport.adapters.flatbuffers.codec import decode_artifact
from jaxport.adapters.storage.path_kind import path_kind
from jaxport.domain.path_kind import PathKind, require
from jaxport.domain.artifact.info import ArtifactInfo, weights_argument
from jaxport.domain.bundle.info import BundleInfo
from ..domain.errors import ArtifactError


@overload
def inspect(blob_or_path: bytes | bytearray | memoryview) -> ArtifactInfo: ...


@overload
def inspect(blob_or_path: str | os.PathLike[str]) -> ArtifactInfo | BundleInfo: ...


def inspect(blob_or_path: bytes | bytearray | memoryview | str | os.PathLike[str]
            ) -> ArtifactInfo | BundleInfo:
    """The summary of an artifact given as bytes or a file path, or of a bundle directory.

    Loads neither JAX nor jaxlib, so it takes milliseconds. A bundle is
    summarized by :func:`inspect_bundle`.

    Raises:
        ArtifactError: the bytes are not a valid artifact, or the bundle is damaged, or the path is
            something else (a converted directory, an ONNX model: the message says what reads it).
        OSError: the file cannot be read.
    """
    if isinstance(blob_or_path, (str, os.PathLike)):
        if os.path.isdir(blob_or_path):
            return inspect_bundle(blob_or_path)
        require(path_kind(blob_or_path), blob_or_path, PathKind.ARTIFACT, PathKind.BUNDLE)
        with open(blob_or_path, "rb") as file:
            blob: bytes | bytearray | memoryview = file.read()
    else:
        blob = blob_or_path
    return ArtifactInfo.of(decode_artifact(blob))


def inspect_bundle(path: str | os.PathLike[str]) -> BundleInfo:
    """The summary of the bundle directory at ``path``, without importing JAX.

    Checks the directory against the manifest (files and sizes) and each
    function file's digest; the weights' table comes from the manifest (the
    weights file itself is not read). Each function's brief signature shows
    the weights, wherever they occur, as ``<params: N arrays>``.

    Raises:
        ArtifactError: the bundle is damaged.
        OSError: the directory cannot be read.
    """
    # Imported here: what the directory adapter imports (ctypes, shutil, threads) would double
    # the time that inspecting an artifact file takes.
    from jaxport.adapters.storage.opened_directory import DiskDirectories

    directory = DiskDirectories().open(path, PathKind.ARTIFACT, PathKind.BUNDLE)
    manifest = directory.manifest
    records = {}
    for entry in manifest.functions:
        try:
            records[entry.name] = decode_artifact(directory.read(entry.file))
        except ArtifactError as exc:
            raise ArtifactError(f"{entry.file}: {exc}") from exc
    # Every function that takes the weights takes the same tree (save_bundle checks it).
    weights = next((weights_argument(records[e.name]) for e in manifest.functions if e.takes_params), None)
    artifacts = {name: ArtifactInfo.of(record, named=weights) for name, record in records.items()}
    return BundleInfo.of(os.fspath(path), manifest, artifacts)
