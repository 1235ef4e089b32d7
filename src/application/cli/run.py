"""``jaxport run PATH [FUNCTION] --input FILE``: one function called on arrays from files, through the call front.

The function is a :class:`~jaxport.application.conversion.model.ConvertedCall`
of any runtime (JAX for an artifact or a bundle; a converted directory's
target, without JAX): the call is checked by jaxport's domain code before
the runtime sees it, and raw-bytes arrays are typed here, once for every runtime.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from jaxport.application.cli.common import UsageError, check_writable, load_artifact, pick, print_results

# The record's modules, NumPy and JAX load where used: `jaxport --help` loads none (tests/unit/test_purity.py;
# figures: cli/main.py).


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
    (:class:`~jaxport.application.conversion.model.ConvertedCall`) and writes or summarizes the results.

    An artifact or a bundle runs on JAX (its model from
    :func:`~jaxport.application.conversion.jax_model.jax_model`, a bundle's weights
    bound); a converted directory on its target's runtime, without JAX.
    """
    from jaxport.domain.path_kind import PathKind, require
    from jaxport.adapters.storage.path_kind import path_kind
    from jaxport.application import wiring
    from jaxport.application.conversion.jax_model import jax_model

    if os.path.isdir(args.path):
        loader = wiring.converted_loader()
        directory = loader.open(args.path)
        if directory.kind is PathKind.CONVERTED:  # its target's runtime, without JAX
            return call_converted(args, pick(loader.load(directory), args.function, args.path))
        bundle = wiring.bundle_loader().load(directory, allowed_custom_calls=args.allow_custom_call)
        return call_converted(args, pick(jax_model(bundle, directory), args.function, f"bundle {args.path}"))
    require(path_kind(args.path), args.path, PathKind.ARTIFACT, PathKind.BUNDLE, PathKind.CONVERTED)
    if args.function is not None:
        raise UsageError(f"{args.path} is an artifact file, not a bundle: leave out FUNCTION ({args.function!r})")
    model = jax_model(load_artifact(args.path, allowed_custom_calls=args.allow_custom_call))
    return call_converted(args, pick(model, None, args.path))


#: The dtypes NumPy stores as raw bytes (``|V2``, ``|V1``) in .npy files.
_RAW = ("bfloat16", "float8_e4m3fn", "float8_e5m2")


def call_converted(args: argparse.Namespace, function: Any) -> int:
    """Calls ``function`` on the arrays of ``args.input``; writes them to ``args.output`` or prints them.

    The inputs are the caller's arguments (``arr_0``, ``arr_1``, ... and keyword
    arrays by name), or every leaf in flattening order (nested arguments, as
    for JAX); raw-bytes arrays are viewed as the dtype the function expects.
    """
    from jaxport.adapters.storage.array_files import read_arrays, write_arrays
    from jaxport.adapters.storage.safetensors_file import numpy_dtype
    from jaxport.domain.calls.front import flatten_tree, result_paths

    if args.output:
        check_writable(args.output)
    inputs = read_arrays(args.input)
    signature = function.signature
    if not args.input:
        _require_inputs(args.path if args.function is None else f"{args.path} {args.function}", function)
    call_args: list[Any] = list(inputs.args)
    if not inputs.kwargs and len(call_args) == len(signature.in_avals):
        leaves = [_typed(leaf, numpy_dtype(aval.dtype.value) if aval.dtype.value in _RAW else None)
                  for leaf, aval in zip(call_args, signature.in_avals)]
        results = function.call_flat(leaves)
    else:
        results = function(*call_args, **inputs.kwargs)
    paths = [path.removeprefix("out") for path in result_paths(signature.out_tree)]  # ['y'], as JAX's key paths
    leaves_with_paths = list(zip(paths, flatten_tree(signature.out_tree, results)))
    if args.output:
        write_arrays(args.output, [leaf for _, leaf in leaves_with_paths])
        return 0
    print_results(leaves_with_paths)
    return 0


def _require_inputs(label: str, function: Any) -> None:
    """Raises UsageError, saying what the function takes, when it takes arguments.

    The count is the caller's: a bundle's weights are bound, not given.
    """
    from jaxport.domain.calls.front import leaf_paths

    signature = function.signature
    args_tree, kwargs_tree = signature.in_tree.children
    keywords = list(kwargs_tree.children_names)
    count = len(args_tree.children)
    if not count and not keywords:
        return
    takes = f"{count} argument{'' if count == 1 else 's'}"
    if keywords:
        takes += f" and keyword argument{'' if len(keywords) == 1 else 's'} {', '.join(keywords)}"
    if signature.nr_weights:
        takes += " besides the bundle's weights"
    avals = signature.in_avals
    arrays = (", ".join(f"{p}: {a}" for p, a in zip(leaf_paths(signature.in_tree), avals))
              if len(avals) <= 4 else f"{len(avals)} arrays")
    by_name = ", keyword arguments by name" if keywords else ""
    them = "it" if count + len(keywords) == 1 else "them"
    raise UsageError(f"{label} takes {takes} ({arrays}) but no --input was given: give {them} with "
                     f"--input FILE.npy (one array each, repeat in order) or --input FILE.npz "
                     f"(arr_0, arr_1, ...{by_name})")


def _typed(leaf: Any, dtype: Any) -> Any:
    """A raw-bytes array viewed as ``dtype`` (when the sizes agree)."""
    if dtype is not None and leaf.dtype.kind == "V" and leaf.dtype.itemsize == dtype.itemsize:
        return leaf.view(dtype)
    return leaf
