"""What differs between two artifacts, field by field, for ``jaxport diff``.

Compares what :class:`ArtifactInfo` shows (signature, platforms, calling
convention, devices, shardings, effects, disabled checks, VJP order, module
size and StableHLO version) and, given by the caller, the operation counts of
the two modules (reading a module needs MLIR, which the domain does not know).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .artifact_info import ArtifactInfo

_FIELDS = (
    ("function name", "fun_name"), ("signature", "signature"), ("platforms", "platforms"),
    ("calling convention", "calling_convention_version"), ("devices", "nr_devices"),
    ("in shardings", "in_shardings"), ("out shardings", "out_shardings"),
    ("ordered effects", "ordered_effects"), ("unordered effects", "unordered_effects"),
    ("disabled checks", "disabled_checks"), ("vjp order", "vjp_order"),
    ("module size (bytes)", "module_size"), ("StableHLO version", "stablehlo_version"),
)


@dataclass(frozen=True, slots=True)
class Difference:
    """One field that differs: its name, and its value in the first and the second artifact.

    >>> print(Difference("platforms", "cpu", "cpu, tpu"))
    platforms: cpu -> cpu, tpu
    """

    what: str
    first: str
    second: str

    def __str__(self) -> str:
        if len(self.first) + len(self.second) <= 60:
            return f"{self.what}: {self.first} -> {self.second}"
        return f"{self.what}:\n  - {self.first}\n  + {self.second}"


def _text(value: object) -> str:
    if isinstance(value, tuple):
        return ", ".join(str(v) for v in value) if value else "none"
    return "unknown" if value is None else str(value)


def info_differences(first: ArtifactInfo, second: ArtifactInfo) -> list[Difference]:
    """The fields of the two summaries that differ, in a fixed order."""
    found = []
    for what, name in _FIELDS:
        a, b = getattr(first, name), getattr(second, name)
        if a != b:
            found.append(Difference(what, _text(a), _text(b)))
    return found


def op_count_differences(first: Mapping[str, int], second: Mapping[str, int]) -> list[Difference]:
    """The operations whose count differs between two modules, by name.

    >>> [str(d) for d in op_count_differences({"stablehlo.sine": 2, "func.func": 1},
    ...                                       {"stablehlo.cosine": 2, "func.func": 1})]
    ['module ops stablehlo.cosine: 0 -> 2', 'module ops stablehlo.sine: 2 -> 0']
    """
    return [Difference(f"module ops {name}", str(first.get(name, 0)), str(second.get(name, 0)))
            for name in sorted(set(first) | set(second)) if first.get(name, 0) != second.get(name, 0)]
