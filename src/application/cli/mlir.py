"""``jaxport mlir FILE``: the StableHLO module of an artifact, as text (imports JAX)."""

from __future__ import annotations

import argparse
from typing import Any

from .common import load_artifact


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Adds ``mlir`` to ``commands``."""
    text = commands.add_parser("mlir", parents=[common], help="print the StableHLO module of an artifact",
                               description="Print the StableHLO module of an artifact as text (imports JAX).")
    text.add_argument("file", metavar="FILE")
    text.set_defaults(handler=print_mlir)


def print_mlir(args: argparse.Namespace) -> int:
    """Prints the module of ``args.file``."""
    # Verified (parsed in a separate process first); any custom call may be shown.
    print(load_artifact(args.file, allowed_custom_calls=("ALL",)).mlir_module())
    return 0
