"""``jaxport diff A B``: how two artifacts differ; exit 0 when identical, 1 otherwise."""

from __future__ import annotations

import argparse
from typing import Any


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Adds ``diff`` to ``commands``."""
    cmd = commands.add_parser(
        "diff", parents=[common], help="compare two artifacts (exit 0 when identical, 1 otherwise)",
        description="List the differences of signature, platforms, calling convention, devices, "
                    "shardings, effects, disabled checks and VJP order, then of the modules: "
                    "byte size and operation counts by name. Exit status: 0 identical, "
                    "1 different, 2 bad input. JAX loads only when the modules differ.")
    cmd.add_argument("first", metavar="A", help="an artifact file")
    cmd.add_argument("second", metavar="B", help="another artifact file")
    cmd.set_defaults(handler=diff_artifacts)


def diff_artifacts(args: argparse.Namespace) -> int:
    """Prints one line (or three) per difference."""
    from ...domain.artifact_diff import Difference, info_differences, op_count_differences
    from ...domain.artifact_info import ArtifactInfo
    from .common import read_artifact

    first, second = read_artifact(args.first), read_artifact(args.second)
    found = info_differences(ArtifactInfo.of(first), ArtifactInfo.of(second))
    modules = first.mlir_module_serialized, second.mlir_module_serialized
    if modules[0] != modules[1]:
        counts = [_op_counts(m) for m in modules]
        found += op_count_differences(*counts) or [Difference("module", "bytes differ", "same operation counts")]
    if not found and first != second:
        found.append(Difference("other fields", "differ", "(pytree node data, kept arguments or VJPs)"))
    for difference in found:
        print(difference)
    return 1 if found else 0


def _op_counts(module: bytes) -> dict[str, int]:
    from collections import Counter

    from ...adapters.mlir_module import StableHloSerializer

    serializer = StableHloSerializer()
    return dict(Counter(serializer.op_names(serializer.deserialize(module))))

