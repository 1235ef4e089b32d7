"""``jaxport convert SOURCE --to TARGET -o DIR``: an artifact or a bundle for another runtime (any registered target).

The conversion itself is :mod:`jaxport.application.conversion.pipeline`'s; ``--to`` takes the
registry's names (:data:`jaxport.domain.targets.registry.TARGETS`), and what ``--help`` says of each
target and its own flags are :data:`jaxport.application.conversion.targets.COMMAND_LINE`'s.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
from typing import TYPE_CHECKING, Any

from jaxport.application.conversion.targets import COMMAND_LINE, Flag
from .common import UsageError

if TYPE_CHECKING:
    from jaxport.domain.targets.registry import TargetEntry

# The record's modules and NumPy are imported where used: `jaxport --help` loads neither
# (tests/unit/test_purity.py; figures: cli/main.py).

_BINDING = re.compile(r"([A-Za-z0-9_][A-Za-z0-9_.\-]*):(.+)")
_VALUE = re.compile(r"\s*([^\W\d]\w*)\s*=\s*(\d+)\s*")


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Adds ``convert`` to ``commands``."""
    cmd = commands.add_parser(
        "convert", parents=[common], help="convert an artifact or a bundle for another runtime",
        description="Write SOURCE (an artifact file or a bundle directory, by jaxport or jax.export) "
                    "for another runtime (--to): "
                    + "; ".join(f"{name} {line.summary}" for name, line in COMMAND_LINE.items())
                    + ". Load any of them with jaxport.load_converted (no JAX) or 'jaxport run'. What the "
                    "runtime cannot run is refused before anything is written; a failed conversion leaves "
                    "nothing at DIR, and an existing DIR is replaced only with --force.")
    cmd.add_argument("source", metavar="SOURCE", help="an artifact file or a bundle directory")
    cmd.add_argument("--to", required=True, metavar="TARGET",
                     help="the runtime target: savedmodel, iree, or another of jaxport's registry")
    cmd.add_argument("-o", "--output", required=True, metavar="DIR", help="the directory to write")
    cmd.add_argument("--force", action="store_true", help="replace DIR if it exists")
    cmd.add_argument("--dims", action="append", default=[], metavar="NAME:VAR=V[,VAR=V...]",
                     help="for a target that compiles static shapes (iree): a binding of the dimension "
                          "variables of function NAME to compile for (repeat: --dims predict:b=1 "
                          "--dims predict:b=8,t=128)")
    cmd.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                     help="a field of the target's options class (repeat), e.g. --option target_cpu=generic")
    cmd.add_argument("--calibration", action="append", default=[], metavar="FUNCTION=FILE.npz",
                     help="for a quantization calibrated on examples (--quantize int8): one example of "
                          "FUNCTION, in the layout of 'jaxport run --input' (arr_0, arr_1, ... and keyword "
                          "arrays by name; repeat; default: the bundle's golden examples)")
    helps: dict[str, tuple[Flag, list[str]]] = {}
    for name, line in COMMAND_LINE.items():
        for flag in line.flags:
            helps.setdefault(flag.flag, (flag, []))[1].append(f"{name}: {flag.help}")
    for flag, texts in helps.values():  # a flag several targets have (--quantize): one help for all
        _add_flag(cmd, "; ".join(texts), flag)
    cmd.set_defaults(handler=run_convert)


def _add_flag(cmd: argparse.ArgumentParser, help: str, flag: Flag) -> None:
    """Adds one flag of the targets; its help is each target's, after its name."""
    how: dict[str, Any] = {}
    if flag.switch:
        how = {"action": "store_true", "default": None}  # None: not given (False would be an option)
    elif flag.repeat:
        how = {"action": "append", "default": []}
    for key in ("metavar", "type"):
        if getattr(flag, key) is not None:
            how[key] = getattr(flag, key)
    cmd.add_argument(flag.flag, dest=flag.dest, help=help, **how)


def run_convert(args: argparse.Namespace) -> int:
    """Converts and prints one line: what was written."""
    from jaxport.domain.targets.registry import TARGETS, target
    from jaxport.application.conversion.api import convert

    if not os.path.exists(args.source):
        raise UsageError(f"{args.source} does not exist")
    if args.to not in TARGETS:
        raise UsageError(f"--to {args.to!r} is not a target: the targets are {', '.join(sorted(TARGETS))}")
    manifest = convert(args.source, args.output, to=args.to, options=_options(args, target(args.to)),
                       dims=parse_dims(args.dims) or None, calibration=read_calibration(args.calibration) or None,
                       overwrite=args.force)
    plan = target(args.to).plan
    made_for = f"; {plan.describe(manifest.target_details)}" if plan.describe is not None else ""
    print(f"wrote {args.output}: {plan.runtime} with {manifest.brief()}{made_for}")
    quantized = manifest.quantization
    if quantized is not None and quantized.weights:
        kept = quantized.kept_float
        print(f"{quantized.mode}: {len(quantized.weights) - len(kept)} weights quantized, "
              f"kept in float: {', '.join(kept) or 'none'}; the golden examples within {quantized.tolerance} "
              f"('jaxport inspect {args.output}' gives each weight's contribution)")
    return 0


def _options(args: argparse.Namespace, entry: TargetEntry) -> object:
    """The options of ``entry``'s target from the command line: its own flags, then ``--option NAME=VALUE``."""
    own = COMMAND_LINE[args.to].flags if args.to in COMMAND_LINE else ()
    flags = {f.field: getattr(args, f.dest) for f in own if getattr(args, f.dest) not in (None, [])}
    mine = {f.flag for f in own}
    for other, line in COMMAND_LINE.items():
        given = [f.flag for f in line.flags if f.flag not in mine and getattr(args, f.dest) not in (None, [])]
        if other != args.to and given:
            raise UsageError(f"{given[0]} applies to --to {other}, not to --to {args.to}")
    for text in args.option:
        name, equals, value = text.partition("=")
        if not equals:
            raise UsageError(f"--option {text!r} is not NAME=VALUE")
        flags[name.strip()] = value
    known = {f.name for f in dataclasses.fields(entry.options)}
    unknown = sorted(set(flags) - known)
    if unknown:
        raise UsageError(f"--to {args.to} has no option {unknown[0]!r} (it has {', '.join(sorted(known))})")
    for flag in own:
        if flag.repeat and flag.field in flags:
            flags[flag.field] = tuple(flags[flag.field])
    try:
        return entry.options(**flags)
    except (TypeError, ValueError) as exc:  # a value the options class refuses (--opset 20)
        raise UsageError(f"--to {args.to}: {exc}") from exc


def parse_dims(texts: list[str]) -> dict[str, list[dict[str, int]]]:
    """``["predict:b=1", "predict:b=8,t=16"]`` as ``{"predict": [{"b": 1}, {"b": 8, "t": 16}]}``.

    Raises:
        UsageError: a text is not ``NAME:VAR=V[,VAR=V...]`` or names a variable twice.

    >>> parse_dims(["predict:b=1", "predict:b=8, t=16", "loss:b=1"])
    {'predict': [{'b': 1}, {'b': 8, 't': 16}], 'loss': [{'b': 1}]}
    """
    dims: dict[str, list[dict[str, int]]] = {}
    for text in texts:
        bad = UsageError(f"--dims {text!r} is not NAME:VAR=V[,VAR=V...] (e.g. predict:b=8,t=128)")
        found = _BINDING.fullmatch(text.strip())
        if found is None:
            raise bad
        binding: dict[str, int] = {}
        for part in found[2].split(","):
            value = _VALUE.fullmatch(part)
            if value is None:
                raise bad
            if value[1] in binding:
                raise UsageError(f"--dims {text!r} gives {value[1]} twice")
            binding[value[1]] = int(value[2])
        dims.setdefault(found[1], []).append(binding)
    return dims


def read_calibration(texts: list[str]) -> dict[str, list[tuple[list[Any], dict[str, Any]]]]:
    """``["predict=a.npz", "predict=b.npz"]`` as ``{"predict": [(args, kwargs), (args, kwargs)]}``, each file
    read as ``jaxport run --input`` reads one.

    Raises:
        UsageError: a text is not ``FUNCTION=FILE``.
        ArrayFileError: a file is not a NumPy file (or holds pickles).
        FileNotFoundError: a file does not exist.
    """
    from jaxport.adapters.storage.array_files import read_arrays

    calibration: dict[str, list[tuple[list[Any], dict[str, Any]]]] = {}
    for text in texts:
        name, equals, file = text.partition("=")
        if not equals or not name.strip() or not file.strip():
            raise UsageError(f"--calibration {text!r} is not FUNCTION=FILE.npz")
        inputs = read_arrays([file.strip()])
        calibration.setdefault(name.strip(), []).append((list(inputs.args), dict(inputs.kwargs)))
    return calibration
