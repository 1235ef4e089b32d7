"""``jaxport run PATH --input FILE``: call an artifact on arrays from NumPy files."""

from __future__ import annotations

import argparse
from typing import Any


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Adds ``run`` to ``commands``."""
    cmd = commands.add_parser(
        "run", parents=[common], help="call an artifact or a bundle's function on arrays from .npz/.npy files",
        description="Call the artifact at PATH, or the function FUNCTION of the bundle at PATH "
                    "with the bundle's weights bound (FUNCTION may be left out when the bundle "
                    "has one function), or of a directory that 'jaxport convert' wrote "
                    "(run by its target's runtime, without JAX). Inputs come from --input files, in order: an "
                    ".npy file is the next positional argument; an .npz file gives positional "
                    "arguments as arr_0, arr_1, ... and keyword arguments by name. When the "
                    "function takes nested arguments (a dict of weights), give every leaf in "
                    "flattening order as arr_0, arr_1, ... bfloat16 and float8 arrays, which NumPy "
                    "stores as raw bytes (|V2, |V1), are read as the dtype the artifact expects.")
    cmd.add_argument("path", metavar="PATH", help="an artifact file, a bundle directory or a directory "
                     "that jaxport converted (run by its target's runtime)")
    cmd.add_argument("function", metavar="FUNCTION", nargs="?", help="the function of a bundle to call")
    cmd.add_argument("--input", action="append", default=[], metavar="FILE",
                     help="an .npz or .npy file of inputs (repeat, in order)")
    cmd.add_argument("--allow-custom-call", action="append", default=[], metavar="TARGET",
                     help="accept this custom-call target besides JAX's stable ones (repeat)")
    cmd.add_argument("--output", metavar="FILE.npz",
                     help="write the results' leaves as arr_0, arr_1, ... instead of printing a summary")
    cmd.set_defaults(handler=run_artifact)


def run_artifact(args: argparse.Namespace) -> int:
    """Calls the function of an artifact, a bundle or a converted directory through the call front
    (:class:`~jaxport.application.converted_model.ConvertedCall`) and writes or summarizes the results.

    An artifact or a bundle runs on JAX (its model from
    :func:`~jaxport.application.jax_model.jax_model`, a bundle's weights
    bound); a converted directory on its target's runtime, without JAX.
    """
    import os

    from .converted import is_converted_directory
    from .run_converted import call_converted, pick

    if is_converted_directory(args.path):
        from ..converted_model import load_converted

        return call_converted(args, pick(load_converted(args.path), args.function, args.path))
    from ..jax_model import jax_model
    from .common import UsageError, load_artifact

    if not os.path.isdir(args.path):
        if args.function is not None:
            raise UsageError(f"{args.path} is an artifact file, not a bundle: leave out FUNCTION "
                             f"({args.function!r})")
        model = jax_model(load_artifact(args.path, allowed_custom_calls=args.allow_custom_call))
        return call_converted(args, pick(model, None, args.path))
    from ..bundles import load_bundle

    model = jax_model(load_bundle(args.path, allowed_custom_calls=args.allow_custom_call))
    return call_converted(args, pick(model, args.function, f"bundle {args.path}"))
