"""``jaxport inspect PATH...``: what artifacts, bundles and converted directories hold, read without JAX."""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import asdict
from typing import Any

from .common import each_path, is_users_error, read_artifact

# The record's and the manifests' modules load where used: `jaxport --help` loads none
# (tests/unit/test_purity.py; figures: cli/main.py).


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Adds ``inspect`` to ``commands``."""
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


def inspect_files(args: argparse.Namespace) -> int:
    """Prints the summary of each file; a bad file is reported and the others still shown."""
    from jaxport.domain.artifact.info import ArtifactInfo
    from jaxport.domain.artifact.window import window_line
    from jaxport.domain.path_kind import PathKind, require
    from jaxport.adapters.storage.path_kind import path_kind
    from jaxport.application.inspection import inspect_bundle

    def show(path: str) -> bool:
        kind = path_kind(path)
        require(kind, path, PathKind.ARTIFACT, PathKind.BUNDLE, PathKind.CONVERTED)
        if kind is PathKind.CONVERTED:
            print(inspect_converted(path, args.json))
            return True
        record = None if os.path.isdir(path) else read_artifact(path)
        info: Any = inspect_bundle(path) if record is None else ArtifactInfo.of(record)
        window = None if record is None else window_line(record)  # JAX's window: `jaxport upgrade` renews it
        if args.json:
            print(json.dumps({"file": path, **asdict(info, dict_factory=_known),
                              **({"window": window} if window else {})}, default=str))
        else:
            print(info if record is None else f"{path}:\n{info}" + (f"\n  window: {window}" if window else ""))
        return True

    # A reader that went away (`inspect ... | head`) ends the command, as main() says, not one path.
    return each_path(args, args.files, show,
                     caught=lambda exc: is_users_error(exc) and not isinstance(exc, BrokenPipeError))


def _known(fields: list[tuple[str, Any]]) -> dict[str, Any]:
    """A summary's fields as JSON, without the ``producer`` that an unsealed or ``jax.export`` file lacks."""
    return {k: v for k, v in fields if not (k == "producer" and v is None)}


def inspect_converted(path: str, as_json: bool) -> str:
    """The text (or, with ``as_json``, the manifest's JSON on one line) that ``jaxport inspect`` prints.

    Raises:
        ArtifactError: the manifest is damaged or names a target this jaxport lacks, or a file is missing,
            extra, or of another size than recorded (the directory is opened as a load opens it).
    """
    from jaxport.adapters.storage.opened_directory import DiskDirectories
    from jaxport.domain.targets.converted_text import converted_text
    from jaxport.domain.path_kind import PathKind

    directory = DiskDirectories().open(path, PathKind.CONVERTED)
    if as_json:
        return json.dumps({"file": path, **json.loads(directory.manifest_bytes)})
    return converted_text(directory.manifest, path)
