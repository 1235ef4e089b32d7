"""Reading what an artifact says about itself, without importing JAX."""

from __future__ import annotations

import os
from pathlib import Path

from ..adapters.flatbuffers_codec import decode_artifact
from ..domain.artifact_info import ArtifactInfo


def inspect(blob_or_path: bytes | bytearray | memoryview | str | os.PathLike[str]) -> ArtifactInfo:
    """The summary of an artifact given as bytes or as a file path.

    Loads neither JAX nor jaxlib, so it takes milliseconds.

    Raises:
        ArtifactError: the bytes are not a valid artifact.
        OSError: the file cannot be read.
    """
    if isinstance(blob_or_path, (str, os.PathLike)):
        blob: bytes | bytearray | memoryview = Path(blob_or_path).read_bytes()
    else:
        blob = blob_or_path
    return ArtifactInfo.of(decode_artifact(blob))
