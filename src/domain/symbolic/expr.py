"""Symbolic dimensions: immutable expressions that duck-type as shape dimensions.

A :class:`DimExpr` wraps a canonical :class:`~jaxport.domain.symbolic.core.Poly`
and the scope it belongs to. Arithmetic with ints and other
dimensions of the same scope gives a new dimension, or a plain ``int`` when
the result is constant. Results are built with ``type(self)``, so a subclass
(the JAX adapter's) carries through every derived expression; a subclass
must keep the constructor signature ``(poly, scope)``.

JAX relies on this protocol: ``__eq__`` never raises (it is False unless the
difference is provably zero), ``>=``/``>``/``<=``/``<`` are decided by the
scope's bounds procedure or raise the inconclusive error, ``int()`` of a
dimension raises it too, there is no ``__index__``, and ``max``/``rmax``/
``min``/``rmin``/``_get_vars``/``_evaluate`` exist.

An expression knows its scope only as a :class:`Scope`: what it asks of one
(the equality rules, the bounds procedure, the constraints). The
implementation, :class:`~.scope.SymbolicScope`, parses its constraint texts
into expressions, so it sits above this module and the parser; the user
constraints it holds, :class:`Constraint`, are expressions and live here.
The functions at the end (``dim_max``, ``is_nonnegative``...) operate on a size
that may be an int or an expression, as the parser and the solver hold them:
they give the int result for ints and leave a symbolic one to the
expression's own operators (so an expression's subclass, the JAX adapter's,
carries through).

>>> from jaxport.domain.symbolic import parse_shape_spec
>>> b, h = parse_shape_spec("b, h")
>>> 2 * b + 1 == 1 + b + b
True
>>> (2 * b + 1) // 2, b - b
(b, 0)
>>> b.max(4), b >= b.min(h)
(max(b, 4), True)
>>> dim_max(3, 4), dim_max(b, 1), dim_min(b, 1)
(4, b, 1)
>>> is_symbolic_dim(b), is_symbolic_dim(4), is_nonnegative(b - 1), is_nonnegative(b - 2)
(True, False, True, None)
"""

from __future__ import annotations

import numbers
import operator
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, ClassVar, Protocol, Self, TypeAlias, Union  # Self: Python 3.11 has it (typing_extensions costs an import)

from .core import FLOORDIV, MAX, MIN, MOD, Factor, Poly, divide
from .decision import BoundsDecider
from ..jax_docs import DocPages
from jaxport.domain.errors import (
    DimensionPowerError, InconclusiveDimensionError, ScopeMixingError, inconclusive_comparison, not_constant
)
from .ops import PYTHON_OPS, DimOps, evaluate

#: A dimension of a shape: an int or a symbolic expression.
DimSize: TypeAlias = Union[int, "DimExpr"]


class Comparison(Enum):
    """The relation that a constraint or a shape assertion requires."""

    GE = ">="
    EQ = "=="


@dataclass(frozen=True, slots=True)
class Constraint:
    """One user constraint, in the form ``difference >= 0`` or ``difference == 0``.

    Attributes:
        text: the constraint as the user wrote it (``"b >= 16"``).
        comparison: ``GE`` for ``>=`` and ``<=`` constraints, ``EQ`` for ``==``.
        difference: ``lhs - rhs`` (``rhs - lhs`` for ``<=``), built before any
            equality rule applied, so that a check evaluates what the user wrote.
    """

    text: str
    comparison: Comparison
    difference: DimExpr | int


class Scope(Protocol):
    """What an expression asks of the scope it belongs to (:class:`~.scope.SymbolicScope`).

    ``str()`` of a scope names it in messages.
    """

    @property
    def constraints(self) -> tuple[Constraint, ...]:
        """The user's constraints, in the order given."""
        ...

    @property
    def decider(self) -> BoundsDecider:
        """The bounds decision procedure, which knows the inequality constraints."""
        ...

    def normalize(self, p: Poly) -> Poly:
        """``p`` rewritten by the equality constraints."""
        ...


def _as_int(x: object) -> int | None:
    """``x`` as an int when it is an integer (also NumPy's), else None."""
    if isinstance(x, int):
        return int(x)
    if isinstance(x, DimExpr) or not hasattr(type(x), "__index__"):
        return None
    try:
        return operator.index(x)  # type: ignore[arg-type]
    except TypeError:
        return None


class DimExpr:
    """A symbolic dimension: a polynomial over dimension variables and operations."""

    __slots__ = ("_poly", "_scope", "__weakref__")
    #: What an inconclusive comparison or ``int()`` raises (the JAX adapter's subclass: also JAX's error).
    inconclusive_error: ClassVar[type[InconclusiveDimensionError]] = InconclusiveDimensionError
    #: The pages of JAX's documentation its messages cite (the JAX adapter's subclass: the installed JAX's).
    docs: ClassVar[DocPages] = DocPages()

    def __init__(self, poly: Poly, scope: Scope) -> None:
        self._poly = poly
        self._scope = scope

    # ---- construction --------------------------------------------------------

    @classmethod
    def variable(cls, name: str, scope: Scope) -> Self | int:
        """The dimension variable ``name`` (after the scope's equality rules)."""
        return cls.from_poly(Poly.variable(name), scope)

    @classmethod
    def from_poly(cls, poly: Poly, scope: Scope) -> Self | int:
        """``poly`` normalized by the scope's rules; an int when it is constant."""
        poly = scope.normalize(poly)
        return poly.const if poly.is_constant else cls(poly, scope)

    def _new(self, poly: Poly) -> Self | int:
        return type(self).from_poly(poly, self._scope)

    @property
    def poly(self) -> Poly:
        """The canonical polynomial."""
        return self._poly

    @property
    def scope(self) -> Scope:
        """The scope that holds the constraints on this expression's variables."""
        return self._scope

    # ---- the protocol JAX uses -----------------------------------------------

    def _get_vars(self) -> set[str]:
        """The names of the dimension variables, including those inside operations."""
        return set(self._poly.vars)

    def _evaluate(self, env: Mapping[str, Any], ops: DimOps | None = None) -> Any:
        """The value for the variable values in ``env`` (ints, tracers, IR values...)."""
        return evaluate(self._poly, env, PYTHON_OPS if ops is None else ops, self.docs)

    def _nonsymbolic_operand(self, op: str, other: object, *, reflected: bool) -> Any:
        """Hook for an operand that is neither an int nor a dimension (a float, an array).

        The domain declines (``NotImplemented``, so Python raises ``TypeError``);
        the JAX adapter overrides this to compute with the dimension as a JAX value.
        ``op`` is one of add, sub, mul, floordiv, mod, divmod, truediv, pow, ge,
        gt, le, lt.
        """
        return NotImplemented

    def _operand(self, other: object, operation: str) -> Poly | None:
        if isinstance(other, DimExpr):
            if other._scope is not self._scope:
                raise ScopeMixingError(operation, str(self._scope), str(other), str(other._scope), docs=self.docs)
            return other._poly
        value = _as_int(other)
        return None if value is None else Poly.constant(value)

    # ---- arithmetic ----------------------------------------------------------

    def __add__(self, other: object) -> Any:
        if type(other) is int:  # fast path: a constant cannot trigger a rewriting rule
            return type(self)(self._poly.add_constant(other), self._scope) if other else self
        return self._combine(other, "add", reflected=False)

    def __radd__(self, other: object) -> Any:
        if type(other) is int:
            return type(self)(self._poly.add_constant(other), self._scope) if other else self
        return self._combine(other, "add", reflected=True)

    def __sub__(self, other: object) -> Any:
        if type(other) is int:
            return type(self)(self._poly.add_constant(-other), self._scope) if other else self
        return self._combine(other, "sub", reflected=False)

    def __rsub__(self, other: object) -> Any:
        return self._combine(other, "sub", reflected=True)

    def __mul__(self, other: object) -> Any:
        if type(other) is int:
            return self._new(self._poly.scale(other)) if other != 1 else self
        return self._combine(other, "mul", reflected=False)

    def __rmul__(self, other: object) -> Any:
        if type(other) is int:
            return self._new(self._poly.scale(other)) if other != 1 else self
        return self._combine(other, "mul", reflected=True)

    def _combine(self, other: object, op: str, *, reflected: bool) -> Any:
        """``self op other`` (``other op self`` when ``reflected``) for add, sub and mul."""
        p = self._operand(other, "for operation mul" if op == "mul" else "for linear combination")
        if p is None:
            return self._nonsymbolic_operand(op, other, reflected=reflected)
        left, right = (p, self._poly) if reflected else (self._poly, p)
        return self._new(left + right if op == "add" else left - right if op == "sub" else left * right)

    def __neg__(self) -> Self | int:
        return self._new(-self._poly)

    def __pos__(self) -> Self:
        return self

    def __pow__(self, exponent: object) -> Any:
        power = _as_int(exponent)
        if power is None and isinstance(exponent, numbers.Real):  # also NumPy's floats
            as_float = float(exponent)
            if not as_float.is_integer():
                raise DimensionPowerError(str(self), exponent, "non-integer")
            power = int(as_float)
        if power is None:
            return self._nonsymbolic_operand("pow", exponent, reflected=False)
        if power < 0:
            raise DimensionPowerError(str(self), exponent, "negative")
        result = Poly.constant(1)
        for _ in range(power):
            result = result * self._poly
        return self._new(result)

    def __rpow__(self, base: object) -> Any:
        return self._nonsymbolic_operand("pow", base, reflected=True)

    def __floordiv__(self, other: object) -> Any:
        return self._divide(other, FLOORDIV, reflected=False)

    def __rfloordiv__(self, other: object) -> Any:
        return self._divide(other, FLOORDIV, reflected=True)

    def __mod__(self, other: object) -> Any:
        return self._divide(other, MOD, reflected=False)

    def __rmod__(self, other: object) -> Any:
        return self._divide(other, MOD, reflected=True)

    def __divmod__(self, other: object) -> Any:
        quotient = self._divide(other, FLOORDIV, reflected=False)
        if quotient is NotImplemented:
            return self._nonsymbolic_operand("divmod", other, reflected=False)
        return quotient, self._divide(other, MOD, reflected=False)

    def __rdivmod__(self, other: object) -> Any:
        quotient = self._divide(other, FLOORDIV, reflected=True)
        if quotient is NotImplemented:
            return self._nonsymbolic_operand("divmod", other, reflected=True)
        return quotient, self._divide(other, MOD, reflected=True)

    def __truediv__(self, other: object) -> Any:
        return self._nonsymbolic_operand("truediv", other, reflected=False)

    def __rtruediv__(self, other: object) -> Any:
        return self._nonsymbolic_operand("truediv", other, reflected=True)

    def _divide(self, other: object, op: str, *, reflected: bool) -> Any:
        p = self._operand(other, f"for operation {op}")
        if p is None:
            return self._nonsymbolic_operand(op, other, reflected=reflected)
        dividend, divisor = (p, self._poly) if reflected else (self._poly, p)
        return self._new(divide(dividend, divisor, op))

    def bounds(self) -> tuple[float, float]:
        """The smallest and largest value the dimension can take, as the scope's
        decision procedure bounds them (``math.inf`` when unbounded).

        >>> from jaxport.domain.symbolic import parse_shape_spec, SymbolicScope
        >>> a, = parse_shape_spec("a", scope=SymbolicScope(["a >= 2", "a <= 4"]))
        >>> a.bounds(), (2 * a + 1).bounds()
        ((2, 4), (5, 9))
        """
        lo, hi = self._scope.decider.bounds(self._poly)  # integers or infinities
        return (lo if isinstance(lo, float) else int(lo)), (hi if isinstance(hi, float) else int(hi))

    def max(self, other: DimSize) -> DimSize:
        """``max(self, other)`` (``core.max_dim`` calls this)."""
        return _extremum(self, other, MAX)

    def rmax(self, other: DimSize) -> DimSize:
        """``max(other, self)``, for an int ``other``."""
        return _extremum(other, self, MAX)

    def min(self, other: DimSize) -> DimSize:
        """``min(self, other)`` (``core.min_dim`` calls this)."""
        return _extremum(self, other, MIN)

    def rmin(self, other: DimSize) -> DimSize:
        """``min(other, self)``, for an int ``other``."""
        return _extremum(other, self, MIN)

    # ---- comparisons ---------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DimExpr):
            if other._scope is not self._scope:
                return False
            p = other._poly
        else:
            value = _as_int(other)
            if value is None:
                return False
            p = Poly.constant(value)
        if p == self._poly:
            return True
        try:
            lo, hi = self._scope.decider.bounds(self._poly - p)
        except (ArithmeticError, ValueError):
            return False
        return lo == 0 and hi == 0

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        # Dimensions of different scopes are never equal; hashing the scope too
        # keeps JAX's shape caches from chaining every deserialized 'b' together.
        return hash((self._poly, id(self._scope)))

    def __ge__(self, other: object) -> Any:
        return self._compare(other, ">=", "ge")

    def __gt__(self, other: object) -> Any:
        return self._compare(other, ">", "gt")

    def __le__(self, other: object) -> Any:
        return self._compare(other, "<=", "le")

    def __lt__(self, other: object) -> Any:
        return self._compare(other, "<", "lt")

    def _compare(self, other: object, relation: str, name: str) -> Any:
        p = self._operand(other, f"when comparing '{self}' {relation} '{other}'")
        if p is None:
            return self._nonsymbolic_operand(name, other, reflected=False)
        if relation in (">=", ">"):
            difference = self._poly - p
        else:
            difference = p - self._poly
        if relation in (">", "<"):
            difference = difference + Poly.constant(-1)
        verdict = self._scope.decider.is_nonnegative(difference)
        if verdict is None:
            raise self.inconclusive_error(self._inconclusive_comparison(relation, other))
        return verdict

    def _inconclusive_comparison(self, relation: str, other: object) -> str:
        if relation == ">":
            suggestion = f"{self} >= {other + 1}"  # type: ignore[operator]
        elif relation == "<":
            suggestion = f"{self} <= {other - 1}"  # type: ignore[operator]
        else:
            suggestion = f"{self} {relation} {other}"
        scope = str(self._scope) if self._scope.constraints else None
        return inconclusive_comparison(f"'{self}' {relation} '{other}'", suggestion, scope, self.docs)

    def __int__(self) -> int:
        raise self.inconclusive_error(not_constant(str(self), self.docs))

    # ---- misc ----------------------------------------------------------------

    def __str__(self) -> str:
        return str(self._poly)

    __repr__ = __str__

    def __copy__(self) -> Self:
        return self

    def __deepcopy__(self, memo: object) -> Self:
        return self


def _extremum(a: DimSize, b: DimSize, op: str) -> DimSize:
    """``op`` (max or min) of ``a`` and ``b``, one of them a :class:`DimExpr`: decided when the
    bounds allow, else the symbolic ``max(a, b)``/``min(a, b)``."""
    leader = a if isinstance(a, DimExpr) else b
    assert isinstance(leader, DimExpr)
    operation = f"for operation {op}"
    pa, pb = leader._operand(a, operation), leader._operand(b, operation)
    if pa is None or pb is None:
        raise TypeError(f"Unsupported operand for symbolic {operation}: {a!r}, {b!r}")
    lo, hi = leader.scope.decider.bounds(pa - pb)
    if lo >= 0:
        return a if op == MAX else b
    if hi <= 0:
        return b if op == MAX else a
    return type(leader).from_poly(Poly.of_factor(Factor.operation(op, pa, pb)), leader.scope)


def dim_max(a: DimSize, b: DimSize) -> DimSize:
    """``max(a, b)``, decided when the bounds allow, else the symbolic ``max(a, b)``."""
    return _extremum(a, b, MAX) if isinstance(a, DimExpr) or isinstance(b, DimExpr) else max(a, b)


def dim_min(a: DimSize, b: DimSize) -> DimSize:
    """``min(a, b)``, decided when the bounds allow, else the symbolic ``min(a, b)``."""
    return _extremum(a, b, MIN) if isinstance(a, DimExpr) or isinstance(b, DimExpr) else min(a, b)


def is_symbolic_dim(x: object) -> bool:
    """Whether ``x`` is a symbolic dimension (not an int)."""
    return isinstance(x, DimExpr)


def is_nonnegative(x: DimSize) -> bool | None:
    """Decides ``x >= 0``: True, False, or None when the bounds are inconclusive."""
    if isinstance(x, int):
        return x >= 0
    return x.scope.decider.is_nonnegative(x.poly)
