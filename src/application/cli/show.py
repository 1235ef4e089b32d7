"""``jaxport inspect`` (no JAX) and ``jaxport mlir``: what an artifact holds."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from typing import Any


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Adds ``inspect`` and ``mlir`` to ``commands``."""
    show = commands.add_parser(
        "inspect", parents=[common], help="print the signature and metadata of artifacts and bundles (no JAX needed)",
        description="Print each artifact's signature, platforms, versions, shardings, effects "
                    "and disabled checks, and the versions of jaxport, JAX, jaxlib and StableHLO "
                    "that wrote it (sealed artifacts and bundles record them); for a bundle "
                    "directory, each function's and the weights' table. Reads the files without "
                    "importing JAX.")
    show.add_argument("files", nargs="+", metavar="FILE",
                      help="artifact files written by jaxport or jax.export, bundle directories, or "
                           "directories that jaxport converted (any target)")
    show.add_argument("--json", action="store_true", help="print one JSON object per artifact")
    show.set_defaults(handler=inspect_files)
    text = commands.add_parser("mlir", parents=[common], help="print the StableHLO module of an artifact",
                               description="Print the StableHLO module of an artifact as text (imports JAX).")
    text.add_argument("file", metavar="FILE")
    text.set_defaults(handler=print_mlir)


def inspect_files(args: argparse.Namespace) -> int:
    """Prints the summary of each file; a bad file is reported and the others still shown."""
    import os

    from ...domain.artifact_info import ArtifactInfo
    from ..inspection import inspect_bundle
    from .common import is_users_error, one_line, read_artifact
    from .converted import inspect_converted, is_converted_directory

    status = 0
    for path in args.files:
        try:
            if is_converted_directory(path):
                print(inspect_converted(path, args.json))
                continue
            info: Any = inspect_bundle(path) if os.path.isdir(path) else ArtifactInfo.of(read_artifact(path))
        except Exception as exc:
            if getattr(args, "debug", False) or not is_users_error(exc):
                raise
            print(f"jaxport inspect: {one_line(exc)}", file=sys.stderr)
            status = 2
            continue
        if args.json:
            print(json.dumps({"file": path, **_known(asdict(info))}, default=str))
        else:
            print(info if os.path.isdir(path) else f"{path}:\n{info}")
    return status


def _known(value: Any) -> Any:
    """A summary as JSON, without the ``producer`` that an unsealed or ``jax.export`` file lacks."""
    if isinstance(value, dict):
        return {k: _known(v) for k, v in value.items() if not (k == "producer" and v is None)}
    if isinstance(value, (list, tuple)):
        return [_known(v) for v in value]
    return value


def print_mlir(args: argparse.Namespace) -> int:
    """Prints the module of ``args.file``."""
    from .common import load_artifact

    # Verified (parsed in a separate process first); any custom call may be shown.
    print(load_artifact(args.file, allowed_custom_calls=("ALL",)).mlir_module())
    return 0
