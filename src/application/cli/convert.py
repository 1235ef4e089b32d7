"""``jaxport convert SOURCE --to iree -o DIR``: an artifact or a bundle, for a runtime beyond JAX."""

from __future__ import annotations

import argparse
import re
from typing import Any

from .common import UsageError, check_writable

_BINDING = re.compile(r"([A-Za-z0-9_][A-Za-z0-9_.\-]*):(.+)")
_VALUE = re.compile(r"\s*([^\W\d]\w*)\s*=\s*(\d+)\s*")


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Adds ``convert`` to ``commands``."""
    cmd = commands.add_parser(
        "convert", parents=[common], help="convert an artifact or a bundle for another runtime (IREE)",
        description="Convert the artifact file or bundle directory SOURCE (by jaxport or jax.export) "
                    "for another runtime and write it to DIR. --to iree compiles each function "
                    "ahead of time with IREE: one module per binding of its dimension variables "
                    "(--dims), the weights read from the bundle's safetensors file as IREE "
                    "parameters; load it with jaxport.load_iree (no JAX) or run it with "
                    "iree-run-module.")
    cmd.add_argument("source", metavar="SOURCE", help="an artifact file or a bundle directory")
    cmd.add_argument("--to", required=True, choices=("iree",), help="the runtime to convert for")
    cmd.add_argument("-o", "--output", required=True, metavar="DIR", help="the directory to write")
    cmd.add_argument("--dims", action="append", default=[], metavar="NAME:VAR=V[,VAR=V...]",
                     help="a binding of the dimension variables of function NAME to compile for "
                          "(repeat: --dims predict:b=1 --dims predict:b=8,t=128)")
    cmd.add_argument("--target-cpu", default="host", metavar="CPU",
                     help="the CPU to compile for: host (default), generic, or an LLVM CPU name "
                          "such as x86-64-v3 or cortex-a72")
    cmd.add_argument("--target-triple", metavar="TRIPLE",
                     help="the machine to compile for, e.g. aarch64-linux-gnu (default: this one)")
    cmd.set_defaults(handler=run_convert)


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


def run_convert(args: argparse.Namespace) -> int:
    """Converts and prints one line: what was written."""
    check_writable(args.output, directory_ok=True)
    dims = parse_dims(args.dims)
    from ..iree_convert import to_iree

    manifest = to_iree(args.source, args.output, dims=dims, target_cpu=args.target_cpu,
                       target_triple=args.target_triple)
    modules = sum(len(f.modules) for f in manifest.functions)
    total = sum(d.size for d in manifest.files.values())
    weights = (f", weights {len(manifest.weights)} arrays" if manifest.params_tree is not None else "")
    print(f"wrote {args.output}: {len(manifest.functions)} functions, {modules} IREE modules for "
          f"{manifest.target}{weights}, {total} bytes")
    return 0
