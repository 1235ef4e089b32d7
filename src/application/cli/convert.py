"""``jaxport convert SOURCE --to savedmodel|iree -o DIR``: an artifact or a bundle for another runtime."""

from __future__ import annotations

import argparse
import os
import re
from typing import Any

from .common import UsageError

_BINDING = re.compile(r"([A-Za-z0-9_][A-Za-z0-9_.\-]*):(.+)")
_VALUE = re.compile(r"\s*([^\W\d]\w*)\s*=\s*(\d+)\s*")
#: The options that only one target takes (their argparse destinations).
_ONLY_FOR = {"savedmodel": ("default", "allow_custom_call"), "iree": ("dims", "target_cpu", "target_triple")}


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Adds ``convert`` to ``commands``."""
    cmd = commands.add_parser(
        "convert", parents=[common], help="convert an artifact or a bundle for TensorFlow Serving or IREE",
        description="Write SOURCE (an artifact file or a bundle directory, by jaxport or jax.export) "
                    "for another runtime. --to savedmodel writes a TensorFlow SavedModel for "
                    "TensorFlow Serving, without importing JAX: one signature per function, the "
                    "bundle's weights as variables (needs pip install 'jaxport[tf]'). --to iree "
                    "compiles each function ahead of time with IREE: one module per binding of its "
                    "dimension variables (--dims), the weights read from the bundle's safetensors "
                    "file as IREE parameters; load it with jaxport.load_iree (no JAX) or run it with "
                    "iree-run-module (needs pip install 'jaxport[iree]'). What the runtime cannot run "
                    "is refused before anything is written; a failed conversion leaves nothing at DIR.")
    cmd.add_argument("source", metavar="SOURCE", help="an artifact file or a bundle directory")
    cmd.add_argument("--to", required=True, choices=("savedmodel", "iree"), help="the format to write")
    cmd.add_argument("-o", "--output", required=True, metavar="DIR", help="the directory to create")
    cmd.add_argument("--default", metavar="NAME", help="savedmodel: the function that serving_default "
                     "calls (default: the only one)")
    cmd.add_argument("--allow-custom-call", action="append", default=[], metavar="TARGET",
                     help="savedmodel: carry this custom-call target although TensorFlow's XLA lacks a "
                          "handler for it (repeat)")
    cmd.add_argument("--dims", action="append", default=[], metavar="NAME:VAR=V[,VAR=V...]",
                     help="iree: a binding of the dimension variables of function NAME to compile for "
                          "(repeat: --dims predict:b=1 --dims predict:b=8,t=128)")
    cmd.add_argument("--target-cpu", metavar="CPU",
                     help="iree: the CPU to compile for: host (default), generic, or an LLVM CPU name "
                          "such as x86-64-v3 or cortex-a72")
    cmd.add_argument("--target-triple", metavar="TRIPLE",
                     help="iree: the machine to compile for, e.g. aarch64-linux-gnu (default: this one)")
    cmd.set_defaults(handler=run_convert)


def run_convert(args: argparse.Namespace) -> int:
    """Converts and prints one line: what was written."""
    if not os.path.exists(args.source):
        raise UsageError(f"{args.source} does not exist")
    for target, options in _ONLY_FOR.items():
        given = [o for o in options if getattr(args, o) not in (None, [])]
        if target != args.to and given:
            flag = "--" + given[0].replace("_", "-")
            raise UsageError(f"{flag} applies to --to {target}, not to --to {args.to}")
    return _to_iree(args) if args.to == "iree" else _to_savedmodel(args)


def _to_savedmodel(args: argparse.Namespace) -> int:
    from ..savedmodel_convert import to_savedmodel

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


def _to_iree(args: argparse.Namespace) -> int:
    from ..iree_convert import to_iree

    manifest = to_iree(args.source, args.output, dims=parse_dims(args.dims), target_cpu=args.target_cpu or "host",
                       target_triple=args.target_triple)
    modules = sum(len(f.modules) for f in manifest.functions)
    total = sum(d.size for d in manifest.files.values())
    weights = f", weights {len(manifest.weights)} arrays" if manifest.params_tree is not None else ""
    print(f"wrote {args.output}: {len(manifest.functions)} functions, {modules} IREE modules for "
          f"{manifest.target}{weights}, {total} bytes")
    return 0


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
