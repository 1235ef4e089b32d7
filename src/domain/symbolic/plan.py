"""The shape plan: how to compute dimension variables from argument shapes, and what to check.

Both sides of a call use one plan. On the export side, the IR adapter emits
it in the wrapped ``main`` (``get_dimension_size``, arithmetic,
``shape_assertion`` custom calls); on the call side, :mod:`.solve` runs it
over the actual shapes, ints or the caller's symbolic dimensions.

A plan is a sequence of steps, in the order JAX emits them:

* :class:`VarDerivation`: ``var = floordiv(dim - offset, coefficient)``, where
  ``dim`` is an argument dimension and ``offset`` an expression over the
  variables derived before (``2*v + 1`` gives ``v = floordiv(dim - 1, 2)``);
* :class:`ShapeAssertion`: ``lhs >= rhs`` or ``lhs == rhs`` over
  :data:`PlanValue` objects, with the error message as a template whose
  ``{0}``, ``{1}``... stand for ``message_values``. The kinds are the
  remainder of a division, ``var >= 1``, the consistency of a dimension that
  only depends on known variables, and the user's constraints.

:func:`build_plan` solves the dimension variables symbolically, as JAX does:
repeatedly, an argument dimension whose specification is ``k*v + c``, with
``v`` the only variable not yet derived and ``c`` over derived variables,
derives ``v``. A dimension whose variables are all derived becomes a
consistency check. A variable that only appears non-linearly (``b*b``, or
``b*h`` with neither known) is an error. The user's constraints whose
variables are all derived are checked last.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, TypeAlias, Union

from .core import Factor, Poly
from jaxport.domain.errors import DimensionEvaluationError, ScopeMixingError, UnsolvableDimensionError
from .expr import Comparison, DimExpr, DimSize, Scope
from .ops import POLY_OPS, evaluate

@dataclass(frozen=True, slots=True)
class ArgDim:
    """The size of dimension ``dim`` of flat argument ``arg``."""

    arg: int
    dim: int


@dataclass(frozen=True, slots=True)
class Remainder:
    """The remainder ``mod(dim - offset, coefficient)`` of the derivation of ``var``."""

    var: str


#: A value that a plan computes: an argument dimension, a remainder, an
#: expression over derived variables, or a constant.
PlanValue: TypeAlias = Union[ArgDim, Remainder, DimExpr, int]


@dataclass(frozen=True, slots=True)
class VarDerivation:
    """``var = floordiv(dimension - offset, coefficient)``.

    Attributes:
        var: the dimension variable.
        source: the argument dimension it is computed from.
        coefficient: nonzero; when it is 1 or -1 the division is exact.
        offset: an expression over variables derived by earlier steps, or an int.
        spec: the exported dimension at ``source``, printed (``"2*v + 1"``).
        where: the dimension's path, ``args[0].shape[1]``.
    """

    var: str
    source: ArgDim
    coefficient: int
    offset: DimExpr | int
    spec: str
    where: str

    @property
    def is_direct(self) -> bool:
        """Whether the variable is the argument dimension itself."""
        return self.coefficient == 1 and isinstance(self.offset, int) and self.offset == 0


@dataclass(frozen=True, slots=True)
class ShapeAssertion:
    """A check on the argument shapes: ``lhs >= rhs`` or ``lhs == rhs``.

    Attributes:
        lhs, comparison, rhs: the predicate that must hold.
        message: the error message, a ``str.format`` template.
        message_values: the values for ``{0}``, ``{1}``... of ``message``.
    """

    lhs: PlanValue
    comparison: Comparison
    rhs: PlanValue
    message: str
    message_values: tuple[PlanValue, ...]

    def format_message(self, values: Sequence[object]) -> str:
        """The message with ``values`` (computed ``message_values``) filled in."""
        return self.message.format(*(str(v) for v in values))


PlanStep: TypeAlias = Union[VarDerivation, ShapeAssertion]


@dataclass(frozen=True, slots=True)
class ShapePlan:
    """Everything the wrapped ``main`` computes and checks before the real function.

    Attributes:
        steps: derivations and assertions, in execution order.
        dim_vars: the dimension variables, sorted by name.
    """

    steps: tuple[PlanStep, ...]
    dim_vars: tuple[str, ...]

    @property
    def derivations(self) -> tuple[VarDerivation, ...]:
        """The derivation of each variable, in execution order."""
        return tuple(s for s in self.steps if isinstance(s, VarDerivation))

    @property
    def assertions(self) -> tuple[ShapeAssertion, ...]:
        """The checks, in execution order."""
        return tuple(s for s in self.steps if isinstance(s, ShapeAssertion))

    def derivation(self, var: str) -> VarDerivation:
        """The derivation of ``var``."""
        return {d.var: d for d in self.derivations}[var]


def format_shape(shape: Sequence[object]) -> str:
    """A shape as JAX prints a tuple of dimensions: ``(b, 4)``, ``(2*b + 1,)``."""
    inner = ", ".join(str(d) for d in shape)
    return f"({inner},)" if len(shape) == 1 else f"({inner})"


_MISMATCH: Final = "Input shapes do not match the polymorphic shapes specification. "

Shape = tuple[DimSize, ...]


@dataclass(frozen=True, slots=True)
class _Equation:
    source: ArgDim
    spec: DimExpr
    where: str


class _Message:
    """Collects the values that a message template refers to, without duplicates."""

    def __init__(self) -> None:
        self.values: list[PlanValue] = []
        self._index: dict[object, int] = {}

    def ref(self, value: PlanValue) -> str:
        key: object = ("expr", value.poly) if isinstance(value, DimExpr) else value
        if key not in self._index:
            self._index[key] = len(self.values)
            self.values.append(value)
        return "{" + str(self._index[key]) + "}"


class _Planner:
    def __init__(self, shapes: Sequence[Shape], paths: Sequence[str], first: DimExpr) -> None:
        self.scope = first.scope
        self.docs = first.docs
        self.specs = ",".join(
            f"{path}.shape = {format_shape(shape)}"
            for path, shape in zip(paths, shapes)
            if any(isinstance(d, DimExpr) for d in shape)
        )
        self.equations = [
            _Equation(ArgDim(i, j), d, f"{path}.shape[{j}]")
            for i, (path, shape) in enumerate(zip(paths, shapes))
            for j, d in enumerate(shape)
            if isinstance(d, DimExpr)
        ]
        self.steps: list[VarDerivation | ShapeAssertion] = []
        self.derived: dict[str, VarDerivation] = {}

    def build(self) -> ShapePlan:
        pending = self.equations
        while pending:
            remaining = [eq for eq in pending if not self._process(eq)]
            if len(remaining) == len(pending):
                raise self._unsolvable(remaining)
            pending = remaining
        for constraint in self.scope.constraints:
            difference = constraint.difference
            if isinstance(difference, DimExpr):
                checked = self._over_derived(difference)
                if checked is not None:
                    self._check_constraint(constraint.text, constraint.comparison, difference, checked)
        return ShapePlan(tuple(self.steps), tuple(sorted(self.derived)))

    def _process(self, eq: _Equation) -> bool:
        unknown = eq.spec.poly.vars - self.derived.keys()
        if not unknown:
            self._check_consistency(eq)
            return True
        if len(unknown) == 1:
            (var,) = unknown
            linear = _linear_in(eq.spec.poly, var)
            if linear is not None:
                self._derive(eq, var, *linear)
                return True
        return False

    # ---- values and messages ---------------------------------------------------

    def var_value(self, var: str) -> PlanValue:
        derivation = self.derived[var]
        if derivation.is_direct:
            return derivation.source
        return DimExpr(Poly.of_factor(Factor.variable(var)), self.scope)

    def value_of(self, dim: DimSize) -> PlanValue:
        if isinstance(dim, DimExpr):
            p = dim.poly
            if len(p.terms) == 1 and not p.const and p.terms[0][1] == 1:
                factor = p.terms[0][0].single_factor()
                if factor is not None and factor.var is not None:
                    return self.var_value(factor.var)
        return dim

    def _message(self, head: str, message: _Message) -> str:
        listing = "".join(
            f"'{v}' = {message.ref(self.var_value(v))} from specification '{d.spec}' "
            f"for dimension {d.where} (= {message.ref(d.source)}), "
            for v, d in self.derived.items()
        )
        return (
            f"{head} Using the following polymorphic shapes specifications: {self.specs}. "
            f"Obtained dimension variables: {listing}. "
            f"Please see {self.docs.shape_poly}#shape-assertion-errors for more details."
        )

    def _assert(self, lhs: PlanValue, comparison: Comparison, rhs: PlanValue,
                head: str, message: _Message) -> None:
        text = self._message(head, message)
        self.steps.append(ShapeAssertion(lhs, comparison, rhs, text, tuple(message.values)))

    # ---- steps -----------------------------------------------------------------

    def _derive(self, eq: _Equation, var: str, coefficient: int, offset: Poly) -> None:
        offset_value = type(eq.spec).from_poly(offset, self.scope)
        derivation = VarDerivation(var, eq.source, coefficient, offset_value, str(eq.spec), eq.where)
        self.steps.append(derivation)
        if abs(coefficient) != 1:
            message = _Message()
            head = (f"{_MISMATCH}Division had remainder {message.ref(Remainder(var))} "
                    f"when computing the value of '{var}'.")
            self._assert(Remainder(var), Comparison.EQ, 0, head, message)
        self.derived[var] = derivation
        head = f"{_MISMATCH}Expected value >= 1 for dimension variable '{var}'."
        self._assert(self.var_value(var), Comparison.GE, 1, head, _Message())

    def _check_consistency(self, eq: _Equation) -> None:
        message = _Message()
        expected = self.value_of(eq.spec)
        head = (f"{_MISMATCH}Found inconsistency between dimension size {eq.where} "
                f"(= {message.ref(eq.source)}) and the specification '{eq.spec}' "
                f"(= {message.ref(expected)}).")
        self._assert(eq.source, Comparison.EQ, expected, head, message)

    def _over_derived(self, difference: DimExpr) -> DimExpr | None:
        """``difference`` over the derived variables only; None when that is a constant.

        As JAX, which evaluates a constraint over the solved variables: a variable
        that the scope's rules rewrote away (``a`` under ``a == b``) is replaced by
        its rewriting; any other is an error. (A constant holds: the scope
        rejected unsatisfiable constraints.)
        """
        missing = difference.poly.vars - self.derived.keys()
        if not missing:
            return difference
        env: dict[str, Poly] = {v: Poly.variable(v) for v in difference.poly.vars}
        for var in sorted(missing):
            rewritten = self.scope.normalize(Poly.variable(var))
            unknown = sorted(rewritten.vars - self.derived.keys())
            if unknown:
                raise DimensionEvaluationError.unknown_variable(unknown[0], list(self.derived), self.docs)
            env[var] = rewritten
        checked = evaluate(difference.poly, env, POLY_OPS, self.docs)
        return None if checked.is_constant else DimExpr(checked, self.scope)

    def _check_constraint(self, text: str, comparison: Comparison, difference: DimExpr,
                          checked: DimExpr) -> None:
        message = _Message()
        value = self.value_of(checked)
        relation = "greater or equal to" if comparison is Comparison.GE else "equal to"
        head = (f"Input shapes do not match the symbolic shape constraint {text}. "
                f"Expected '{difference}' to be {relation} 0, but found {message.ref(value)}. ")
        self._assert(value, comparison, 0, head, message)

    def _unsolvable(self, pending: list[_Equation]) -> UnsolvableDimensionError:
        unknown = sorted(frozenset().union(*(eq.spec.poly.vars for eq in pending)) - self.derived.keys())
        names = ", ".join(repr(v) for v in unknown)
        unprocessed = ", ".join(f"'{eq.spec}' for dimension size {eq.where}" for eq in pending)
        return UnsolvableDimensionError(
            f"Cannot solve for values of dimension variables {{{names}}}. "
            "We can only solve linear uni-variate constraints. "
            f"Using the following polymorphic shapes specifications: {self.specs}. "
            f"Unprocessed specifications: {unprocessed}. "
            f"Please see {self.docs.shape_poly}#dimension-variables-must-be-solvable-from-the-input-shapes "
            "for more details."
        )


def _linear_in(p: Poly, var: str) -> tuple[int, Poly] | None:
    """``(k, c)`` with ``p == k*var + c`` and ``var`` not in ``c``, or None."""
    coefficient = 0
    rest = {}
    for t, c in p.terms:
        if var not in t.vars:
            rest[t] = c
            continue
        factor = t.single_factor()
        if factor is None or factor.var != var:
            return None
        coefficient = c
    return coefficient, Poly.of(rest, p.const)


def _first_dim(shapes: Sequence[Shape]) -> DimExpr | None:
    """The first symbolic dimension, the others checked to be of its scope."""
    first: DimExpr | None = None
    for shape in shapes:
        for d in shape:
            if isinstance(d, DimExpr):
                if first is None:
                    first = d
                elif d.scope is not first.scope:
                    raise ScopeMixingError("in the argument shapes", str(first.scope), str(d), str(d.scope),
                                           docs=first.docs)
    return first


@functools.lru_cache(maxsize=1024)
def build_plan(shapes: tuple[Shape, ...], paths: tuple[str, ...]) -> ShapePlan:
    """The shape plan for exported argument ``shapes`` (one per flat argument).

    Args:
        shapes: the exported shapes, ints and symbolic dimensions of one scope.
        paths: the path of each argument in messages (``args[0]``, ``kwargs['x']``).

    Returns:
        The plan; empty when no dimension is symbolic.

    Raises:
        UnsolvableDimensionError: a variable cannot be computed from the shapes.
        ScopeMixingError: the shapes use dimensions of different scopes.
    """
    if len(shapes) != len(paths):
        raise ValueError(f"{len(shapes)} shapes but {len(paths)} argument paths")
    first = _first_dim(shapes)
    if first is None:
        return ShapePlan((), ())
    return _Planner(shapes, paths, first).build()
