"""Golden examples checked on a runtime: the tolerances by dtype, the verdict per output, the report.

A bundle saved with examples keeps, per example, the caller's inputs and
the outputs that JAX computed for them when the bundle was saved. A
numerics check runs each example again, on the runtime a directory is for,
and compares each output with the recorded one. The comparison is
normwise, per output array: with ``err`` the largest absolute difference
between the two and ``ref`` the largest magnitude of the recorded (finite)
values, the output passes when::

    err <= atol + rtol * ref

so an error is measured against the scale of the output it is in (an
element near zero in an output of large values is allowed the error its
neighbours are). The relative error reported is ``err / ref``. NaN matches
NaN and an infinity the same infinity; any other difference involving one
is an infinite error.

The default tolerances (:data:`DEFAULT_TOLERANCES`) allow around a hundred
units in the last place for ``float32`` and ``float64`` (different compilers
fuse, reorder and approximate differently) and a few for the narrow floats,
whose results are usually computed wider and rounded once. Integers,
booleans and PRNG keys (as their key data) must match exactly, whatever
tolerances the caller gives; the caller's ``rtol`` and ``atol`` replace the
defaults for the floating and complex dtypes.

This module does the arithmetic on plain numbers (the differences and
magnitudes, found by an adapter) and formats the report; it reads no file
and knows no runtime (:mod:`jaxport.application.conversion.golden` runs the examples).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from jaxport.domain.artifact.record import TreeSpec
from jaxport.domain.bundle.manifest import Example
from jaxport.domain.errors import ArtifactError


@dataclass(frozen=True, slots=True)
class Tolerance:
    """How far an output may be from the recorded one: ``err <= atol + rtol * ref``."""

    rtol: float
    atol: float

    def allows(self, max_abs_error: float, max_reference: float) -> bool:
        """Whether an output with these largest error and magnitude passes."""
        return max_abs_error <= self.atol + self.rtol * max_reference

    def __str__(self) -> str:
        return f"rtol {_number(self.rtol)}, atol {_number(self.atol)}"


#: Exact: what integers, booleans and key data must be.
EXACT = Tolerance(0.0, 0.0)

#: The default tolerance of each floating and complex dtype; every other dtype is exact.
DEFAULT_TOLERANCES: dict[str, Tolerance] = {
    "float64": Tolerance(1e-12, 1e-13), "complex128": Tolerance(1e-12, 1e-13),
    "float32": Tolerance(1e-5, 1e-6), "complex64": Tolerance(1e-5, 1e-6),
    "float16": Tolerance(1e-2, 1e-3), "bfloat16": Tolerance(5e-2, 5e-3),
    "float8_e4m3fn": Tolerance(0.25, 0.025), "float8_e5m2": Tolerance(0.5, 0.05),
}


def tolerance_for(dtype: str, rtol: float | None = None, atol: float | None = None) -> Tolerance:
    """The tolerance of an output of ``dtype``: the default, or the caller's where given.

    >>> tolerance_for("float32"), tolerance_for("float32", atol=1e-4), tolerance_for("int32", rtol=0.1)
    (Tolerance(rtol=1e-05, atol=1e-06), Tolerance(rtol=1e-05, atol=0.0001), Tolerance(rtol=0.0, atol=0.0))

    Raises:
        ValueError: ``rtol`` or ``atol`` is negative or not a number.
    """
    for name, value in (("rtol", rtol), ("atol", atol)):
        if value is not None and not (isinstance(value, (int, float)) and value >= 0 and math.isfinite(value)):
            raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    default = DEFAULT_TOLERANCES.get(dtype)
    if default is None:
        return EXACT
    return Tolerance(default.rtol if rtol is None else float(rtol), default.atol if atol is None else float(atol))


@dataclass(frozen=True, slots=True)
class OutputCheck:
    """One output of one example, compared with the output recorded at save.

    Attributes:
        function: the function's name.
        example: the example's index.
        output: the output's path (``out``, ``out[0]``, ``out['y']``).
        dtype: the output's dtype (``"key<fry>"`` for a key, compared as its data).
        tolerance: what it must satisfy.
        max_abs_error: the largest absolute difference (``inf`` where a NaN or
            an infinity differs).
        max_reference: the largest magnitude among the recorded finite values.
        problem: why the output could not be compared (the call failed, it has
            another shape), or None.
    """

    function: str
    example: int
    output: str
    dtype: str
    tolerance: Tolerance
    max_abs_error: float = 0.0
    max_reference: float = 0.0
    problem: str | None = None

    @property
    def relative_error(self) -> float:
        """``max_abs_error / max_reference`` (0 without error, ``inf`` for an error on zeros)."""
        if self.max_abs_error == 0:
            return 0.0
        return self.max_abs_error / self.max_reference if self.max_reference > 0 else math.inf

    @property
    def passed(self) -> bool:
        """Whether the output was compared and is within its tolerance."""
        return self.problem is None and self.tolerance.allows(self.max_abs_error, self.max_reference)

    def to_json(self) -> dict[str, Any]:
        """The check as JSON (``inf`` as the string ``"inf"``)."""
        return {"function": self.function, "example": self.example, "output": self.output, "dtype": self.dtype,
                "max_abs_error": _json_number(self.max_abs_error), "relative_error": _json_number(self.relative_error),
                "rtol": self.tolerance.rtol, "atol": self.tolerance.atol, "passed": self.passed,
                "problem": self.problem}


def check_example_fits(example: Example, in_tree: TreeSpec, out_tree: TreeSpec, file: str) -> None:
    """Checks that an example's recorded pytrees are the function's (caller's inputs, results).

    Raises:
        ArtifactError: naming ``file``, the function and the example.
    """
    for what, recorded, actual in (("inputs", example.in_tree, in_tree), ("outputs", example.out_tree, out_tree)):
        if recorded != actual:
            raise ArtifactError(f"{file}: the {what} of example {example.index} of '{example.function}' "
                                "do not have the function's pytree structure")


@dataclass(frozen=True)
class NumericsReport:
    """The golden examples of a directory, run again on a runtime and compared.

    Attributes:
        path: the directory checked.
        runtime: the runtime's name (``"jax"``, ``"tf"``, ``"iree"``).
        examples: the number of examples run.
        checks: one per output of each example.
        converted: whether a bundle was converted for the runtime to run it.
        left_out: the examples run on compiled variants only that fit none, as
            ``function[index]`` (counted in ``examples``, without checks).
    """

    path: str
    runtime: str
    examples: int
    checks: tuple[OutputCheck, ...]
    converted: bool = False
    left_out: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """Whether there were examples and every output of each passed."""
        return self.examples > 0 and all(c.passed for c in self.checks)

    @property
    def failures(self) -> tuple[OutputCheck, ...]:
        """The checks that did not pass."""
        return tuple(c for c in self.checks if not c.passed)

    def to_json(self) -> dict[str, Any]:
        """The report as JSON."""
        return {"path": self.path, "runtime": self.runtime, "converted": self.converted, "ok": self.ok,
                "examples": self.examples, "checks": [c.to_json() for c in self.checks]}

    def __str__(self) -> str:
        """A table: one row per function and output, over that function's examples."""
        via = " (converted from the bundle)" if self.converted else ""
        if not self.examples:
            return (f"{self.path}: FAILED: no golden examples to run on {self.runtime}{via} (save the bundle "
                    "with examples={'function': [(args, kwargs), ...]})")
        functions = len({c.function for c in self.checks})
        verdict = "ok" if self.ok else f"FAILED ({len(self.failures)} of {len(self.checks)} outputs)"
        lines = [f"{self.path}: {self.examples} example{'s' if self.examples != 1 else ''} of {functions} "
                 f"function{'s' if functions != 1 else ''} on {self.runtime}{via}: {verdict}"]
        rows: list[tuple[str, ...]] = [("function", "output", "dtype", "examples", "max abs error",
                                        "max rel error", "rtol", "atol", "result")]
        rows.extend(_row(group) for group in _groups(self.checks))
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        lines.extend("  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)
        lines.extend(f"  {c.function} {c.output}, example {c.example}: {c.problem}"
                     for c in self.checks if c.problem is not None)
        return "\n".join(lines)


def _groups(checks: Sequence[OutputCheck]) -> list[list[OutputCheck]]:
    """The checks per function and output, in the order they first appear."""
    groups: dict[tuple[str, str], list[OutputCheck]] = {}
    for check in checks:
        groups.setdefault((check.function, check.output), []).append(check)
    return list(groups.values())


def _row(group: Sequence[OutputCheck]) -> tuple[str, ...]:
    first = group[0]
    failed = [c.example for c in group if not c.passed]
    result = "pass" if not failed else "FAIL (example" + ("s " if len(failed) > 1 else " ") + \
        ", ".join(str(i) for i in failed) + ")"
    compared = [c for c in group if c.problem is None]
    abs_error = _number(max(c.max_abs_error for c in compared)) if compared else "-"
    rel_error = _number(max(c.relative_error for c in compared)) if compared else "-"
    return (first.function, first.output, first.dtype, str(len(group)), abs_error, rel_error,
            _number(first.tolerance.rtol), _number(first.tolerance.atol), result)


def _number(x: float) -> str:
    return "0" if x == 0 else f"{x:.3g}"


def _json_number(x: float) -> float | str:
    return x if math.isfinite(x) else "inf"
