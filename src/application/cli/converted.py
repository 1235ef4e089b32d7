"""``jaxport run`` and ``jaxport inspect`` on any directory that ``jaxport convert`` wrote.

Neither imports JAX: the manifest is read with the standard library, the
arrays with NumPy, and the functions run on the target's runtime. The
manifest is :mod:`jaxport.domain.converted`'s.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def is_converted_directory(path: str) -> bool:
    """Whether ``path`` is a directory that jaxport converted, for any target."""
    from ..converted_model import is_converted

    return is_converted(path)


def run_converted_directory(args: argparse.Namespace) -> int:
    """``jaxport run DIR FUNCTION``: calls the function on arrays from files; writes or summarizes the results."""
    from ..converted_model import load_converted
    from .run_converted import call_converted, pick

    return call_converted(args, pick(load_converted(args.path), args.function, args.path))


def inspect_converted(path: str, as_json: bool) -> str:
    """The text (or, with ``as_json``, the manifest's JSON on one line) that ``jaxport inspect`` prints.

    Raises:
        ArtifactError: the manifest is damaged.
    """
    from ...domain.converted import ConvertedManifest
    from ...domain.converted_text import converted_text
    from ..converted_model import manifest_path_of

    data = Path(path, manifest_path_of(path) or "manifest.json").read_bytes()
    manifest = ConvertedManifest.from_json(data)
    if as_json:
        return json.dumps({"file": path, **json.loads(data)})
    return converted_text(manifest, path)
