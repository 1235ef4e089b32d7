"""``jaxport warm PATH [--arg SPEC...]``: compile an artifact for this machine into the executable cache."""

from __future__ import annotations

import argparse
from typing import Any


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Adds ``warm`` to ``commands``."""
    cmd = commands.add_parser(
        "warm", parents=[common], help="compile an artifact into the executable cache",
        description="Compile the artifact at PATH for this machine and store the executable in "
                    "the cache (JAXPORT_CACHE_DIR), so that the first call of a later process "
                    "loads it instead of compiling. A static artifact needs no specs; a symbolic "
                    "one needs the shapes to serve, as --arg/--kwarg specs with integer "
                    "dimensions (the grammar of jaxport export). Prints 'compiled', 'hit' (already "
                    "cached) or 'uncached' (caching is off or the backend cannot store executables).")
    cmd.add_argument("path", metavar="PATH", help="an artifact file")
    cmd.add_argument("--arg", action="append", default=[], metavar="SPEC",
                     help="the spec of the next positional argument, e.g. f32[32,784] (repeat, in order)")
    cmd.add_argument("--kwarg", action="append", default=[], metavar="NAME=SPEC",
                     help="the spec of a keyword argument (repeat)")
    cmd.add_argument("--allow-custom-call", action="append", default=[], metavar="TARGET",
                     help="accept this custom-call target besides JAX's stable ones (repeat)")
    cmd.set_defaults(handler=warm_artifact)


def warm_artifact(args: argparse.Namespace) -> int:
    """Compiles into the cache and prints the outcome."""
    from .common import Progress, UsageError, load_artifact, to_struct
    from .export import specs_of

    progress = Progress()
    arg_specs, kwarg_specs = specs_of(args.arg, args.kwarg, [])
    for spec in (*arg_specs, *kwarg_specs.values()):
        if spec.is_symbolic:
            raise UsageError(f"warm compiles for concrete shapes: {spec} has a symbolic dimension")
    exported = load_artifact(args.path, allowed_custom_calls=args.allow_custom_call)
    if not arg_specs and not kwarg_specs:
        from ...domain.symbolic import is_symbolic_dim

        symbolic = [str(a) for a in exported.in_avals if any(is_symbolic_dim(d) for d in a.shape)]
        if symbolic:
            raise UsageError(f"{args.path} has symbolic shapes ({', '.join(symbolic)}): give the "
                             "shapes to compile for with --arg/--kwarg, e.g. --arg 'f32[32,784]'")
    with progress.phase(f"compiling {args.path}"):
        outcome = exported.warm(*map(to_struct, arg_specs), **{k: to_struct(v) for k, v in kwarg_specs.items()})
    print(f"{args.path}: {outcome}")
    return 0
