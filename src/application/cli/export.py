"""``jaxport export MODULE:FUNCTION --arg SPEC ... -o PATH``: export a function from the shell."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from typing import TYPE_CHECKING, Any

from jaxport.adapters.jax.installed import require_jax
from jaxport.application.cli.common import Progress, UsageError, check_writable

# The symbolic layer (26 ms in a fresh process) loads when a spec is parsed, not for --help; JAX,
# NumPy and the record's modules load where used (tests/unit/test_purity.py; figures: cli/main.py).
if TYPE_CHECKING:
    from jaxport.domain.specs import ArraySpec
    from jaxport.domain.symbolic import DimExpr

_SPEC_HELP = ("DTYPE[DIMS]: f32[b,784], bf16[8,b], i32[], bool[3]; dtypes bool, i8..i64, u8..u64, "
              "f16, bf16, f32, f64, c64, c128 or NumPy names; dimensions are integers or "
              "expressions over symbolic names (b, 2*h + 1, max(b, 4)) shared by all specs "
              "and the constraints")


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Adds ``export`` to ``commands``."""
    cmd = commands.add_parser(
        "export", parents=[common], help="export a Python function to an artifact file",
        description="Import MODULE (from the current directory or the Python path), export "
                    "FUNCTION for the given argument specs and write the artifact to PATH. "
                    "A plain function is jitted; a jax.jit function keeps its shardings.",
        epilog=f"SPEC is {_SPEC_HELP}.")
    cmd.add_argument("target", metavar="MODULE:FUNCTION", help="e.g. mymodel:predict or pkg.mod:Model.apply")
    cmd.add_argument("--arg", action="append", default=[], metavar="SPEC",
                     help="the spec of the next positional argument (repeat, in order)")
    cmd.add_argument("--kwarg", action="append", default=[], metavar="NAME=SPEC",
                     help="the spec of a keyword argument (repeat)")
    cmd.add_argument("--constraint", action="append", default=[], metavar="EXPR",
                     help="a constraint on the symbolic dimensions, e.g. 'b >= 16' or 'h == 2*w'")
    cmd.add_argument("--platform", action="append", default=[], type=str.lower, metavar="P",
                     choices=("cpu", "cuda", "rocm", "tpu", "gpu"),
                     help="a platform to lower for: cpu, cuda, rocm, tpu (repeat; default: this machine's)")
    cmd.add_argument("--vjp-order", type=int, default=0, metavar="N",
                     help="include the VJPs up to order N, for differentiation by the caller")
    cmd.add_argument("--params", metavar="FILE",
                     help="weights (.safetensors or .npz, names like dense/w): the function takes them "
                          "as its first argument, a dict nested by the names' '/', and PATH is a bundle")
    cmd.add_argument("--consumer", metavar="RUNTIME==VERSION",
                     help="write what that JAX or TensorFlow release reads (e.g. jax==0.9.2, tf==2.21): "
                          "modules for its StableHLO, the format version its reader knows; "
                          "refused, with the reason, when it would not read the function")
    cmd.add_argument("-o", "--output", required=True, metavar="PATH",
                     help="the artifact file to write (a bundle directory with --params)")
    cmd.set_defaults(handler=run_export)


def specs_of(args: list[str], kwargs: list[str], constraints: list[str], *,
             expr_class: type[DimExpr] | None = None) -> tuple[list[ArraySpec], dict[str, ArraySpec]]:
    """The specs of the command line, parsed in one scope with the constraints.

    With the default ``expr_class`` this is pure Python (a quick check before
    JAX loads); the export parses again with JAX's dimension class.

    Raises:
        ArgSpecError: a spec does not parse.
        ConstraintError: a constraint does not parse.
        UsageError: a keyword is given twice.
    """
    from jaxport.domain.arg_specs import parse_arg_spec, parse_kwarg_spec  # with the symbolic layer: 26 ms
    from jaxport.domain.symbolic import DimExpr, SymbolicScope

    expr_class = expr_class or DimExpr
    for text in constraints:
        try:
            SymbolicScope((text,))
        except ValueError as exc:
            raise UsageError(f"--constraint {text!r} does not parse: {exc}") from exc
    scope = SymbolicScope(tuple(constraints))
    arg_specs = [parse_arg_spec(text, scope=scope, expr_class=expr_class) for text in args]
    kwarg_specs: dict[str, ArraySpec] = {}
    for text in kwargs:
        name, spec = parse_kwarg_spec(text, scope=scope, expr_class=expr_class)
        if name in kwarg_specs:
            raise UsageError(f"--kwarg {name} is given twice")
        kwarg_specs[name] = spec
    return arg_specs, kwarg_specs


def import_function(target: str) -> Any:
    """The callable that ``MODULE:FUNCTION`` names (``FUNCTION`` may be dotted).

    Raises:
        UsageError: the target is malformed, the module cannot be imported,
            or it has no such callable.
    """
    module_name, sep, qualname = target.partition(":")
    if not sep or not module_name or not qualname:
        raise UsageError(f"{target!r} is not MODULE:FUNCTION, e.g. mymodel:predict")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # like `python -m`: modules of the current directory
    try:
        value: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise UsageError(f"cannot import module {module_name!r}: {exc}") from exc
    except Exception as exc:  # the user's module failed while it ran
        raise UsageError(f"importing module {module_name!r} failed: {type(exc).__name__}: {exc}") from exc
    for part in qualname.split("."):
        if not hasattr(value, part):
            raise UsageError(f"module {module_name!r} has no attribute {qualname!r}")
        value = getattr(value, part)
    if not callable(value):
        raise UsageError(f"{target} is a {type(value).__name__}, not a function")
    return value


def raised_in_target(exc: BaseException, target: str) -> bool:
    """Whether ``exc`` went through the code of the module that ``target`` (``MODULE:FUNCTION``)
    names: the user's function failed while traced (a ``KeyError`` on its weights, an ``assert``)."""
    path = getattr(sys.modules.get(target.partition(":")[0]), "__file__", None)
    return path is not None and any(frame.f_code.co_filename == path
                                    for frame, _ in traceback.walk_tb(exc.__traceback__))


def run_export(args: argparse.Namespace) -> int:
    """Exports and writes the artifact."""
    require_jax()  # before anything else: the user's module is not imported without JAX
    progress = Progress()
    if args.vjp_order < 0:
        raise UsageError(f"--vjp-order must be 0 or more, got {args.vjp_order}")
    specs_of(args.arg, args.kwarg, args.constraint)  # bad specs fail before anything loads
    if args.consumer is not None:
        from jaxport.domain.artifact.consumers import find_consumer

        find_consumer(args.consumer)  # so does a consumer the table does not know
    check_writable(args.output, directory_ok=args.params is not None)
    params = None
    if args.params is not None:
        with progress.phase(f"reading the weights in {args.params}"):
            params = read_params(args.params)
    with progress.phase(f"importing {args.target}"):
        fun = import_function(args.target)
    from jaxport.adapters.jax.cli import structs_like, to_struct
    from jaxport.adapters.jax.lowering.dims import JaxDim
    from jaxport.application.export.service import export

    arg_specs, kwarg_specs = specs_of(args.arg, args.kwarg, args.constraint, expr_class=JaxDim)
    leading = [] if params is None else [structs_like(params)]
    with progress.phase("tracing, lowering and checking"):
        exported = export(fun, platforms=args.platform or None)(
            *leading, *map(to_struct, arg_specs), **{k: to_struct(v) for k, v in kwarg_specs.items()})
    with progress.phase(f"serializing (vjp order {args.vjp_order}) and writing {args.output}"):
        if params is None:
            from jaxport.application.artifact_files import save

            save(exported, args.output, vjp_order=args.vjp_order, consumer=args.consumer)
        else:
            from jaxport.application.bundles.api import save_bundle

            name = args.target.partition(":")[2].rsplit(".", 1)[-1]
            save_bundle(args.output, {name: exported}, params, vjp_order=args.vjp_order,
                        consumer=args.consumer)
    progress.say(f"wrote {args.output}")
    return 0


def read_params(path: str) -> dict[str, Any]:
    """The weights in ``path`` as a dict nested by the names' ``/`` (``dense/w``).

    Raises:
        ArrayFileError: the file cannot be read.
        UsageError: a name is both a weight and a prefix of another (``a`` and ``a/b``).
    """
    from jaxport.adapters.storage.array_files import read_named_arrays
    from jaxport.domain.leaf_names import name_entries

    params: dict[str, Any] = {}
    for name, array in sorted(read_named_arrays(path).items()):
        *parents, leaf = name_entries(name) or ("",)
        node = params
        for entry in parents:
            child = node.setdefault(entry, {})
            if not isinstance(child, dict):
                raise UsageError(f"{path}: weight {name!r} lies under another weight")
            node = child
        if leaf in node:
            raise UsageError(f"{path}: weight {name!r} is also the prefix of other weights")
        node[leaf] = array
    return params
