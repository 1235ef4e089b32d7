"""``jaxport.inspect``: what an artifact or a bundle says about itself, read without importing JAX."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, overload

from ..adapters.flatbuffers_codec import decode_artifact
from ..domain.artifact_info import ArtifactInfo

if TYPE_CHECKING:
    from ..domain.bundle_info import BundleInfo


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
        ArtifactError: the bytes are not a valid artifact, or the bundle is damaged.
        OSError: the file cannot be read.
    """
    if isinstance(blob_or_path, (str, os.PathLike)) and os.path.isdir(blob_or_path):
        return inspect_bundle(blob_or_path)
    if isinstance(blob_or_path, (str, os.PathLike)):
        with open(blob_or_path, "rb") as file:
            blob: bytes | bytearray | memoryview = file.read()
    else:
        blob = blob_or_path
    return ArtifactInfo.of(decode_artifact(blob))


def inspect_bundle(path: str | os.PathLike[str]) -> BundleInfo:
    """The summary of the bundle directory at ``path``, without importing JAX.

    See :func:`jaxport.application.bundle_inspect.inspect_bundle`.
    """
    from .bundle_inspect import inspect_bundle as summarize

    return summarize(path)
