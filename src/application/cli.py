"""The ``jaxport`` command: look into artifacts from the shell.

``jaxport inspect FILE...`` prints each artifact's signature and metadata
without importing JAX; ``jaxport mlir FILE`` prints the StableHLO module.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict

from ..domain.errors import ArtifactError
from .inspect import inspect


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jaxport", description=__doc__.splitlines()[0] if __doc__ else None)
    commands = parser.add_subparsers(dest="command", required=True)
    show = commands.add_parser("inspect", help="print the signature and metadata of artifacts (no JAX needed)")
    show.add_argument("files", nargs="+", help="artifact files written by jaxport.save or jax.export")
    show.add_argument("--json", action="store_true", help="print one JSON object per artifact")
    text = commands.add_parser("mlir", help="print the StableHLO module of an artifact (imports JAX)")
    text.add_argument("file")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line; returns the exit status (1 when an artifact is bad)."""
    args = _parser().parse_args(argv)
    status = 0
    if args.command == "inspect":
        for path in args.files:
            try:
                info = inspect(path)
            except (ArtifactError, OSError) as exc:
                print(f"{path}: {exc}", file=sys.stderr)
                status = 1
                continue
            print(json.dumps({"file": path, **asdict(info)}) if args.json else f"{path}:\n{info}")
        return status
    from .files import load

    try:
        print(load(args.file).mlir_module())
    except (ArtifactError, OSError) as exc:
        print(f"{args.file}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
