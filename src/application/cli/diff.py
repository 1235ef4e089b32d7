"""``jaxport diff A B``: how two artifacts differ; exit 0 when the same program, 1 otherwise."""

from __future__ import annotations

import argparse
from collections import Counter
from typing import Any

from jaxport.domain.artifact.module_format import check_portable_artifact
from .. import wiring
from .common import read_artifact_and_trailer

# The record's modules and JAX are imported where used: `jaxport --help` loads neither
# (tests/unit/test_purity.py; figures: cli/main.py).


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Adds ``diff`` to ``commands``."""
    cmd = commands.add_parser(
        "diff", parents=[common], help="compare two artifacts (exit 0 when the same, 1 otherwise)",
        description="List the differences of every field, for the function and each of its "
                    "VJPs: signature, platforms, calling convention, devices, shardings, "
                    "effects, disabled checks, VJP order, kept arguments, symbolic constraints, "
                    "then of the modules: byte size and operation counts by name. When only "
                    "one file has the jaxport trailer (a jax.export file, or one written with "
                    "integrity=False), a last line says so, with the constraints it adds. "
                    "Exit status: 0 the same program, 1 different, 2 bad input. JAX loads "
                    "only when the modules differ.")
    cmd.add_argument("first", metavar="A", help="an artifact file")
    cmd.add_argument("second", metavar="B", help="another artifact file")
    cmd.set_defaults(handler=diff_artifacts)


def diff_artifacts(args: argparse.Namespace) -> int:
    """Prints one line (or three) per difference, then the note on the trailer if any."""
    from jaxport.domain.artifact.diff import Compared, compare

    first, second = (Compared(path, *read_artifact_and_trailer(path)) for path in (args.first, args.second))
    comparison = compare(first, second, _op_counts)
    for line in comparison.lines():
        print(line)
    return 1 if comparison.differences else 0


def _op_counts(module: bytes) -> dict[str, int]:
    """The operation counts of ``module``, parsed here only after the verifying
    process has parsed it and written it again (the files are untrusted input).

    Raises:
        ArtifactError: the module does not parse or verify.
    """
    from jaxport.adapters.jax import internals as jax_internals

    stablehlo = wiring.stablehlo()
    check_portable_artifact(module, newest_readable=stablehlo.newest_readable_version())
    checked = wiring.module_worker().check(module, sdy=jax_internals.backend_serializes_with_sdy())
    return dict(Counter(stablehlo.op_names(stablehlo.deserialize(checked.reserialized))))

