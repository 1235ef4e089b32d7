"""Running a shape plan: the call-side solve and check, and a generic interpreter.

:func:`run_plan` executes a :class:`~.plan.ShapePlan` over any value type
through a :class:`PlanHandler` (which reads argument dimensions and handles
assertions) and a :class:`~.ops.DimOps`. The IR adapter uses it to emit the
wrapped ``main``; :func:`solve_call` uses it with Python values to solve the
dimension variables from actual shapes (ints, or the caller's symbolic
dimensions when an exported function is called inside another export) and
to check every assertion statically.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Protocol, cast

from ..errors import RankMismatchError, ShapeMismatchError
from jaxport.domain.errors import ShapeAssertionError
from .expr import Comparison, DimExpr, DimSize
from .expr import is_nonnegative
from .ops import PYTHON_OPS, DimOps
from .plan import ArgDim, PlanValue, Remainder, ShapeAssertion, ShapePlan, VarDerivation, format_shape
from .plan import Shape, build_plan


class PlanHandler(Protocol):
    """What :func:`run_plan` asks of its caller."""

    def arg_dim(self, source: ArgDim) -> Any:
        """The value of an argument dimension."""
        ...

    def check(
        self, assertion: ShapeAssertion, lhs: Any, rhs: Any, values: Callable[[], list[Any]]
    ) -> None:
        """Handles one assertion; ``values()`` computes its ``message_values``."""
        ...


def run_plan(plan: ShapePlan, handler: PlanHandler, ops: DimOps = PYTHON_OPS) -> dict[str, Any]:
    """Executes ``plan``; returns the value of each dimension variable.

    Each derivation computes ``floordiv(dim - offset, k)`` and its remainder
    with ``ops``; each assertion is passed to ``handler.check``.
    """
    env: dict[str, Any] = {}
    remainders: dict[str, Any] = {}

    def value(v: PlanValue) -> Any:
        if isinstance(v, ArgDim):
            return handler.arg_dim(v)
        if isinstance(v, Remainder):
            remainder = remainders[v.var]
            return ops.constant(0) if remainder is None else remainder
        if isinstance(v, int):
            return ops.constant(v)
        return v._evaluate(env, ops)

    def message_values(assertion: ShapeAssertion) -> Callable[[], list[Any]]:
        return lambda: [value(v) for v in assertion.message_values]

    for step in plan.steps:
        if isinstance(step, VarDerivation):
            env[step.var], remainders[step.var] = _derive(step, handler.arg_dim(step.source), value, ops)
        else:
            handler.check(step, value(step.lhs), value(step.rhs), message_values(step))
    return env


def _derive(step: VarDerivation, dim: Any, value: Callable[[PlanValue], Any], ops: DimOps) -> tuple[Any, Any]:
    numerator = dim
    if not step.is_direct and not (isinstance(step.offset, int) and step.offset == 0):
        numerator = ops.add(dim, ops.mul(value(step.offset), ops.constant(-1)))
    if step.coefficient == 1:
        return numerator, None  # an exact division: no remainder to compute
    k = ops.constant(step.coefficient)
    return ops.floordiv(numerator, k), ops.mod(numerator, k)


class _StaticChecker:
    """Checks assertions on actual shapes; a symbolic check must be provable."""

    def __init__(self, shapes: Sequence[Shape]) -> None:
        self.shapes = shapes

    def arg_dim(self, source: ArgDim) -> Any:
        return self.shapes[source.arg][source.dim]

    def check(self, assertion: ShapeAssertion, lhs: Any, rhs: Any,
              values: Callable[[], list[Any]]) -> None:
        if assertion.comparison is Comparison.GE:
            holds = is_nonnegative(lhs - rhs) is True
        else:
            holds = bool(lhs == rhs)
        if not holds:
            raise ShapeAssertionError(assertion.format_message(values()))


@dataclass(frozen=True, slots=True)
class CallSolution:
    """The dimension variables' values for one call.

    Attributes:
        values: variable name to int, or to the caller's symbolic dimension.
    """

    values: Mapping[str, DimSize]

    def evaluate(self, dim: DimSize) -> DimSize:
        """The value of an exported dimension under this solution."""
        return cast(DimSize, dim._evaluate(self.values)) if isinstance(dim, DimExpr) else dim

    def evaluate_shape(self, shape: Sequence[DimSize]) -> Shape:
        """The values of an exported shape under this solution."""
        return tuple(self.evaluate(d) for d in shape)


def _canonical_dim(d: object) -> DimSize:
    if isinstance(d, (int, DimExpr)):
        return d
    return operator.index(d)  # type: ignore[arg-type]


def check_shape(path: str, spec: Sequence[DimSize], shape: Sequence[DimSize]) -> None:
    """Checks the rank and every constant dimension of the argument ``path`` against its exported ``spec``.

    Raises:
        RankMismatchError, ShapeMismatchError: with the path and both shapes.
    """
    if len(spec) != len(shape):
        raise RankMismatchError(path, format_shape(spec), format_shape(shape))
    for j, (want, got) in enumerate(zip(spec, shape)):
        if isinstance(want, int) and not (isinstance(got, int) and got == want):
            raise ShapeMismatchError(f"{path}.shape[{j}]", format_shape(spec), format_shape(shape))


@functools.lru_cache(maxsize=4096)
def _solve_cached(exported: tuple[Shape, ...], actual: tuple[Shape, ...],
                  paths: tuple[str, ...]) -> CallSolution:
    for path, spec, shape in zip(paths, exported, actual):
        check_shape(path, spec, shape)
    plan = build_plan(exported, paths)
    values = run_plan(plan, _StaticChecker(actual))
    return CallSolution(MappingProxyType(values))


def solve_call(
    exported: Sequence[Sequence[DimSize]],
    actual: Sequence[Sequence[object]],
    paths: Sequence[str],
) -> CallSolution:
    """Solves the dimension variables from actual shapes and checks every constraint.

    Cached per (exported shapes, actual shapes, paths).

    Args:
        exported: the exported shape of each flat argument.
        actual: the actual shape of each flat argument: ints (NumPy integers
            are accepted) or symbolic dimensions of the caller's scope.
        paths: the path of each argument, for messages (``args[0]``).

    Returns:
        The values of the dimension variables.

    Raises:
        RankMismatchError, ShapeMismatchError: a rank or a constant dimension differs.
        ShapeAssertionError: a constraint fails (or cannot be proven for symbolic
            shapes); the message names the argument path, the dimension variable,
            the value found and the specification, in JAX's words.
        UnsolvableDimensionError: a variable cannot be computed from the shapes.
    """
    if len(exported) != len(actual) or len(exported) != len(paths):
        raise ValueError(
            f"expected {len(exported)} argument shapes and paths, got {len(actual)} and {len(paths)}")
    key_exported = tuple(tuple(s) for s in exported)
    key_actual = tuple(tuple(_canonical_dim(d) for d in s) for s in actual)
    return _solve_cached(key_exported, key_actual, tuple(paths))


def call_output_shapes(
    exported_in: Sequence[Sequence[DimSize]],
    exported_out: Sequence[Sequence[DimSize]],
    actual_in: Sequence[Sequence[object]],
    paths: Sequence[str],
) -> tuple[Shape, ...]:
    """The output shapes of a call: :func:`solve_call`, then the exported outputs evaluated."""
    solution = solve_call(exported_in, actual_in, paths)
    return tuple(solution.evaluate_shape(shape) for shape in exported_out)
