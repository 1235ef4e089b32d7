"""``jaxport run`` and ``jaxport inspect`` on a directory that ``jaxport convert --to iree`` wrote.

Neither imports JAX: the directory is read with the standard library, the
arrays with NumPy, and the functions run on IREE's runtime.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path


def is_iree_directory(path: str) -> bool:
    """Whether ``path`` is a directory whose manifest names the IREE format."""
    from ...domain.iree_manifest import FORMAT_NAME, MANIFEST_FILE, manifest_format

    manifest = Path(path, MANIFEST_FILE)
    return os.path.isdir(path) and manifest.is_file() and manifest_format(manifest.read_bytes()) == FORMAT_NAME


def run_iree(args: argparse.Namespace) -> int:
    """``jaxport run DIR FUNCTION``: calls the function on arrays from files; writes or summarizes the results."""
    from ..iree_load import load_iree
    from .run_converted import call_converted, pick

    return call_converted(args, pick(load_iree(args.path), args.function, args.path))


def inspect_iree(path: str, as_json: bool) -> str:
    """The text (or, with ``as_json``, the manifest's JSON on one line) that ``jaxport inspect`` prints.

    Raises:
        ArtifactError: the manifest is damaged.
    """
    from ...domain.iree_manifest import MANIFEST_FILE, IreeManifest, manifest_text

    data = Path(path, MANIFEST_FILE).read_bytes()
    manifest = IreeManifest.from_json(data)
    if as_json:
        return json.dumps({"file": path, **json.loads(data)})
    return manifest_text(manifest, path)
