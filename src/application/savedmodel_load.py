"""SavedModels that jaxport wrote: their functions on TensorFlow, and their summary without it.

Both read the jaxport manifest in ``assets.extra/jaxport/`` first (no
TensorFlow): the directory is checked against it (every file there, of the
recorded size; the artifacts' digests), and each signature's record gives
the call checks of the runtime port, so a bad call is refused with
jaxport's error before TensorFlow loads.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from ..adapters.flatbuffers_codec import decode_artifact
from ..domain.artifact import ArtifactRecord
from ..domain.errors import ArtifactError
from ..domain.runtime_calls import with_weights_bound
from ..domain.savedmodel_info import SavedModelInfo
from ..domain.savedmodel_manifest import MANIFEST_PATH, SavedModelManifest
from ..domain.savedmodel_names import DEFAULT_SIGNATURE
from .runtime_function import RuntimeFunction


def is_savedmodel(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a directory with a jaxport SavedModel manifest."""
    return (Path(path) / MANIFEST_PATH).is_file()


def read_savedmodel(path: str | os.PathLike[str]) -> tuple[SavedModelManifest, dict[str, ArtifactRecord]]:
    """The manifest of the SavedModel at ``path`` and each signature's full record (weights included).

    Raises:
        ArtifactError: the directory is not a SavedModel jaxport wrote, or a
            file is missing, truncated or changed (the message names it).
        OSError: ``path`` is not a readable directory.
    """
    root = Path(path)
    if not (root / MANIFEST_PATH).is_file():
        raise ArtifactError(f"{root} is not a SavedModel that jaxport wrote: it has no {MANIFEST_PATH}")
    manifest = SavedModelManifest.from_json((root / MANIFEST_PATH).read_bytes())
    for name, digest in manifest.files.items():
        file = root / name
        if not file.is_file():
            raise ArtifactError(f"{root}: the file {name} of the SavedModel is missing")
        if file.stat().st_size != digest.size:
            raise ArtifactError(f"{root}: the file {name} has {file.stat().st_size} bytes where its "
                                f"manifest records {digest.size}: it changed after the conversion")
    records = {}
    for entry in manifest.signatures:
        blob = (root / entry.file).read_bytes()
        if hashlib.sha256(blob).hexdigest() != manifest.files[entry.file].sha256:
            raise ArtifactError(f"{root}: the digest of {entry.file} does not match its manifest: "
                                "it changed after the conversion")
        try:
            records[entry.name] = decode_artifact(blob)
        except ArtifactError as exc:
            raise ArtifactError(f"{root / entry.file}: {exc}") from exc
    return manifest, records


def inspect_savedmodel(path: str | os.PathLike[str]) -> SavedModelInfo:
    """The summary of the SavedModel at ``path``, read without TensorFlow or JAX.

    Raises:
        ArtifactError, OSError: as :func:`read_savedmodel`.
    """
    manifest, records = read_savedmodel(path)
    return SavedModelInfo.of(os.fspath(path), manifest, records)


def load_savedmodel(path: str | os.PathLike[str]) -> dict[str, RuntimeFunction]:
    """The functions of the SavedModel at ``path``, run by TensorFlow, each checked by jaxport first.

    Each takes the caller's arguments (a bundle's weights are the
    SavedModel's variables) and returns the exported result pytree of NumPy
    arrays. ``serving_default`` is there too when the SavedModel has it.
    TensorFlow loads the SavedModel at the first call.

    Raises:
        ArtifactError, OSError: as :func:`read_savedmodel`.
    """
    from ..adapters.tf_runtime import TfSavedModel, TfSignatureRuntime

    manifest, records = read_savedmodel(path)
    model = TfSavedModel(os.fspath(path))
    functions = {}
    for entry in manifest.signatures:
        record = records[entry.name]
        caller = with_weights_bound(record, entry.weights) if entry.weights else record
        runtime = TfSignatureRuntime(model, entry.name, [t.name for t in entry.inputs],
                                     [t.name for t in entry.outputs])
        functions[entry.name] = RuntimeFunction(caller, runtime, weights_bound=entry.weights > 0)
    if manifest.default is not None:
        functions.setdefault(DEFAULT_SIGNATURE, functions[manifest.default])
    return functions
