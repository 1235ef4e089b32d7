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
    """Calls the artifact and writes or summarizes the results."""
    from .converted import is_converted_directory, run_converted_directory

    if is_converted_directory(args.path):
        return run_converted_directory(args)  # through the target's runtime, without JAX
    from ...adapters.array_files import read_arrays
    from .common import check_writable, print_results

    if args.output:
        check_writable(args.output)
    inputs = read_arrays(args.input)
    label, target = _target(args.path, args.function, args.allow_custom_call)
    if not args.input:
        _require_inputs(label, target)
    import jax
    import numpy as np

    call_args: list[Any] = list(inputs.args)
    kwargs: dict[str, Any] = dict(inputs.kwargs)
    if (not kwargs and len(call_args) == target.in_tree.num_leaves
            and jax.tree.structure((tuple(call_args), kwargs)) != target.in_tree):
        call_args, kwargs = jax.tree.unflatten(target.in_tree, call_args)  # nested arguments, as leaves
    call_args, kwargs = _typed_raw_arrays(target, call_args, kwargs)
    results = target(*call_args, **kwargs)
    leaves = jax.tree_util.tree_flatten_with_path(results)[0]
    if args.output:
        from ...adapters.array_files import write_arrays

        write_arrays(args.output, [np.asarray(leaf) for _, leaf in leaves])
        return 0
    print_results([(jax.tree_util.keystr(path), np.asarray(leaf)) for path, leaf in leaves])
    return 0


def _target(path: str, function: str | None, allowed: list[str]) -> tuple[str, Any]:
    """What to call, named for messages: the artifact (verified, as :func:`jaxport.load`
    does) or the bundle's function, as a :class:`BoundFunction` (its weights bound)."""
    import os

    from .common import UsageError, bundle_function, load_artifact

    if not os.path.isdir(path):
        if function is not None:
            raise UsageError(f"{path} is an artifact file, not a bundle: leave out FUNCTION ({function!r})")
        from ..bundles import BoundFunction

        return path, BoundFunction(load_artifact(path, allowed_custom_calls=allowed), None, False)
    from ..bundles import load_bundle

    bundle = load_bundle(path, allowed_custom_calls=allowed)
    if function is None:
        if len(bundle) != 1:
            raise UsageError(f"bundle {path} has functions {', '.join(sorted(bundle))}: name one")
        function = next(iter(bundle))
    return f"{path} {function}", bundle_function(path, bundle, function)


def _require_inputs(label: str, target: Any) -> None:
    """Raises UsageError, saying what the function takes, when it takes arguments.

    The count is the caller's: a bundle's weights are bound, not given.
    """
    from ...adapters.jax_avals import leaf_paths
    from .common import UsageError

    args_tree, kwargs_tree = target.in_tree.children()
    keywords = [str(k) for k in kwargs_tree.node_data()[1]]
    count = len(args_tree.children())
    if not count and not keywords:
        return
    takes = f"{count} argument{'' if count == 1 else 's'}"
    if keywords:
        takes += f" and keyword argument{'' if len(keywords) == 1 else 's'} {', '.join(keywords)}"
    if target.takes_params:
        takes += " besides the bundle's weights"
    avals = target.in_avals
    arrays = (", ".join(f"{p}: {a.str_short()}" for p, a in zip(leaf_paths(target.in_tree, avals), avals))
              if len(avals) <= 4 else f"{len(avals)} arrays")
    by_name = ", keyword arguments by name" if keywords else ""
    them = "it" if count + len(keywords) == 1 else "them"
    raise UsageError(f"{label} takes {takes} ({arrays}) but no --input was given: give {them} with "
                     f"--input FILE.npy (one array each, repeat in order) or --input FILE.npz "
                     f"(arr_0, arr_1, ...{by_name})")


def _typed_raw_arrays(target: Any, args: list[Any], kwargs: dict[str, Any]) -> tuple[Any, Any]:
    """NumPy stores bfloat16 and float8 arrays as raw bytes (dtype ``|V2``, ``|V1``):
    view those as the dtype the function expects, when the sizes agree."""
    import jax

    leaves, tree = jax.tree.flatten((tuple(args), kwargs))
    if tree != target.in_tree:
        return args, kwargs  # the call reports the mismatch
    typed = [leaf.view(aval.dtype) if leaf.dtype.kind == "V" and leaf.dtype.itemsize == aval.dtype.itemsize
             else leaf for leaf, aval in zip(leaves, target.in_avals)]
    new_args, new_kwargs = jax.tree.unflatten(tree, typed)
    return list(new_args), new_kwargs
