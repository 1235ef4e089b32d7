"""``jaxport convert SOURCE --to savedmodel -o DIR``: an artifact or a bundle for another runtime."""

from __future__ import annotations

import argparse
from typing import Any


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Adds ``convert`` to ``commands``."""
    cmd = commands.add_parser(
        "convert", parents=[common], help="convert an artifact or a bundle to a TensorFlow SavedModel",
        description="Write SOURCE (an artifact file or a bundle directory, by jaxport or jax.export) "
                    "as a TensorFlow SavedModel for TensorFlow Serving, without importing JAX: one "
                    "signature per function, the bundle's weights as variables. Needs TensorFlow "
                    "(pip install 'jaxport[tf]'). What TensorFlow cannot run as exported is refused "
                    "before anything is written; a failed conversion leaves nothing at DIR.")
    cmd.add_argument("source", metavar="SOURCE", help="an artifact file or a bundle directory")
    cmd.add_argument("--to", required=True, choices=("savedmodel",), help="the format to write")
    cmd.add_argument("-o", "--output", required=True, metavar="DIR", help="the directory to create")
    cmd.add_argument("--default", metavar="NAME", help="the function that serving_default calls "
                     "(default: the only one)")
    cmd.add_argument("--allow-custom-call", action="append", default=[], metavar="TARGET",
                     help="carry this custom-call target although TensorFlow's XLA lacks a handler "
                          "for it (repeat)")
    cmd.set_defaults(handler=run_convert)


def run_convert(args: argparse.Namespace) -> int:
    """Converts and prints one line: what was written."""
    import os

    from ..savedmodel_convert import to_savedmodel
    from .common import UsageError

    if not os.path.exists(args.source):
        raise UsageError(f"{args.source} does not exist")
    manifest = to_savedmodel(args.source, args.output, default=args.default,
                             allowed_custom_calls=args.allow_custom_call)
    names = [s.name for s in manifest.signatures]
    default = f"; serving_default: {manifest.default}" if manifest.default not in (None, "serving_default") else ""
    graph = manifest.files["saved_model.pb"].size
    print(f"wrote {args.output}: a TensorFlow SavedModel with {len(names)} "
          f"function{'' if len(names) == 1 else 's'} ({', '.join(names)}{default}), "
          f"{len(manifest.weights)} weight{'' if len(manifest.weights) == 1 else 's'} as variables "
          f"({manifest.total_weight_bytes} bytes), saved_model.pb {graph} bytes")
    return 0
