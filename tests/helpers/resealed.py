"""Rewriting a file of a converted directory under a re-sealed manifest: the digests pass, the content does not.

What a hostile or careless hand can do to a directory: change a model file
and write its new size and SHA-256 into the manifest, so that the loader's
digest check passes and only the runtime's own checks at load stand
between the file and the first call.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from jaxport.adapters.storage.path_kind import manifests
from jaxport.domain.checked_directory import manifest_format
from jaxport.domain.path_kind import CONVERTED_FORMATS


def manifest_path_of(directory: str | os.PathLike[str]) -> str | None:
    """The path (relative to ``directory``) of the converted directory's manifest there, or None."""
    found = manifests(Path(directory))
    return next((place for place, data in found.items() if manifest_format(data) in CONVERTED_FORMATS), None)


def rewrite(directory: str | os.PathLike[str], name: str, data: bytes) -> None:
    """Writes ``data`` as the file ``name`` of ``directory`` and its size and digest into the manifest."""
    root = Path(directory)
    where = manifest_path_of(root)
    assert where is not None, f"{root} is not a converted directory"
    (root / name).write_bytes(data)
    manifest = json.loads((root / where).read_text())
    manifest["files"][name] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    (root / where).write_text(json.dumps(manifest))


def truncate(directory: str | os.PathLike[str], name: str) -> None:
    """Keeps the first half of the file ``name`` (every runtime's reader refuses it), re-sealed."""
    data = (Path(directory) / name).read_bytes()
    rewrite(directory, name, data[: len(data) // 2])
