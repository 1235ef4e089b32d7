"""``jaxport warm PATH [FUNCTION] [--arg SPEC...]``: compile an artifact, or a bundle's
functions, for this machine into JAX's persistent compilation cache.

The command over :mod:`jaxport.adapters.jax.exported.warm` (the service of the same name)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from jaxport.application.cli.common import Progress, UsageError, load_artifact, pick
from jaxport.application.cli.export import specs_of

# JAX and the bundles' modules load where used: `jaxport --help` loads neither (tests/unit/test_purity.py;
# figures: cli/main.py).


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Adds ``warm`` to ``commands``."""
    cmd = commands.add_parser(
        "warm", parents=[common],
        help="compile an artifact or a bundle's functions into JAX's compilation cache",
        description="Compile the artifact at PATH, or the functions of the bundle directory at PATH "
                    "(only FUNCTION when given), for this machine into JAX's persistent "
                    "compilation cache, so that the first call of a later process loads the "
                    "executable instead of compiling. The cache is JAX's, configured by "
                    "JAX_COMPILATION_CACHE_DIR; without one, warm refuses. So that JAX writes "
                    "every compilation, however fast, this command sets JAX's write thresholds "
                    "for its own process only (jax_persistent_cache_min_compile_time_secs=0 and "
                    "jax_persistent_cache_min_entry_size_bytes=-1), unless the environment sets "
                    "them (JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS, "
                    "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES); the processes that later load "
                    "the entries need neither. A static artifact needs no specs; a symbolic "
                    "one needs the shapes to serve, as --arg/--kwarg specs with integer "
                    "dimensions (the grammar of jaxport export); for a bundle's function that "
                    "takes the weights, the specs are those of the arguments after the weights. "
                    "Prints the cache directory for each artifact or function.")
    cmd.add_argument("path", metavar="PATH", help="an artifact file or a bundle directory")
    cmd.add_argument("function", metavar="FUNCTION", nargs="?",
                     help="the function of a bundle to warm (all of them when left out)")
    cmd.add_argument("--arg", action="append", default=[], metavar="SPEC",
                     help="the spec of the next positional argument, e.g. f32[32,784] (repeat, in order)")
    cmd.add_argument("--kwarg", action="append", default=[], metavar="NAME=SPEC",
                     help="the spec of a keyword argument (repeat)")
    cmd.add_argument("--allow-custom-call", action="append", default=[], metavar="TARGET",
                     help="accept this custom-call target besides JAX's stable ones (repeat)")
    cmd.set_defaults(handler=warm_artifact)


def warm_artifact(args: argparse.Namespace) -> int:
    """Compiles into JAX's cache and prints its directory, one line per artifact or bundle function."""
    from jaxport.adapters.jax.exported.warm import cache_directory, keep_every_compilation
    from jaxport.adapters.jax.cli import specs_after_weights, to_struct

    progress = Progress()
    arg_specs, kwarg_specs = specs_of(args.arg, args.kwarg, [])
    for spec in (*arg_specs, *kwarg_specs.values()):
        if spec.is_symbolic:
            raise UsageError(f"warm compiles for concrete shapes: {spec} has a symbolic dimension")
    specs = ([to_struct(s) for s in arg_specs], {k: to_struct(v) for k, v in kwarg_specs.items()})
    if os.path.isdir(args.path):
        targets = _bundle_targets(args.path, args.function, args.allow_custom_call, bool(args.arg or args.kwarg))
    elif args.function is not None:
        raise UsageError(f"{args.path} is an artifact file, not a bundle: leave out FUNCTION ({args.function!r})")
    else:
        targets = [(args.path, load_artifact(args.path, allowed_custom_calls=args.allow_custom_call), [])]
    for name, exported, bound in targets:
        if not arg_specs and not kwarg_specs:
            _require_static(name, exported)
    cache_directory(args.path)  # refuses before compiling anything when there is no cache
    keep_every_compilation(os.environ)  # this process only warms: JAX writes what it compiles
    for name, exported, bound in targets:
        call_args, call_kwargs = specs if arg_specs or kwarg_specs or not bound else specs_after_weights(exported)
        with progress.phase(f"compiling {name}"):
            directory = exported.warm(*bound, *call_args, **call_kwargs)
        print(f"{name}: in JAX's compilation cache at {directory}")
    return 0


def _bundle_targets(path: str, function: str | None, allowed: list[str],
                    has_specs: bool) -> list[tuple[str, Any, list[Any]]]:
    """``(label, Exported, arguments bound before the specs)`` for each function of the
    bundle at ``path`` to warm: ``function`` only, or all of them."""
    from jaxport.application.bundles.api import load_bundle

    bundle = load_bundle(path, allowed_custom_calls=allowed)
    if function is None and has_specs and len(bundle) != 1:
        raise UsageError(f"bundle {path} has functions {', '.join(sorted(bundle))}: "
                         "name the one the --arg/--kwarg specs are for")
    names = sorted(bundle) if function is None else [function]
    targets = []
    for name in names:
        bound = pick(bundle, name, f"bundle {path}")
        targets.append((f"{path} {name}", bound.exported, [bound.params] if bound.takes_params else []))
    return targets


def _require_static(name: str, exported: Any) -> None:
    """Raises UsageError when ``exported`` has symbolic input shapes (warm needs the shapes)."""
    from jaxport.domain.symbolic import is_symbolic_dim  # 26 ms that --help does not pay

    symbolic = [str(a) for a in exported.in_avals if any(is_symbolic_dim(d) for d in a.shape)]
    if symbolic:
        raise UsageError(f"{name} has symbolic shapes ({', '.join(symbolic)}): give the "
                         "shapes to compile for with --arg/--kwarg, e.g. --arg 'f32[32,784]'")
