"""Symbolic scopes: the user's constraints on dimension variables.

Every symbolic expression belongs to one :class:`SymbolicScope` (the
:class:`~.expr.Scope` its expressions ask); expressions of different scopes
never mix. The scope holds

* inequality constraints (``"b >= 16"``, ``"b <= 1024"``, ``"a >= b"``), which
  feed the bounds decision procedure;
* equality constraints (``"h == 2*w"``, ``"floordiv(a, b) == c"``), which act
  as rewriting rules: the left-hand side, a term times a coefficient, is
  replaced by the right-hand side in every expression built afterwards in
  the scope.

:func:`parse_shape_spec` is the public entry for parsing symbolic shapes: a
spec, and optionally the scope it lives in (a new scope by default).
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from types import CodeType, FrameType
from typing import Final

from .core import FLOORDIV, MOD, Factor, Poly, Term, substitute_term
from .decision import BoundsDecider
from jaxport.domain.errors import ConstraintError
from .expr import Comparison, Constraint, DimExpr, DimSize, Scope
from .parser import parse_constraint, parse_shape

_PACKAGE_DIR: Final = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_MAX_REWRITE_ROUNDS: Final = 16


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: Term
    coefficient: int
    replacement: Poly


def _frame_location(code: CodeType, lasti: int, lineno: int) -> str:
    position = next(itertools.islice(code.co_positions(), lasti // 2, None), None)
    column = (position[2] if position is not None else None) or 0
    return f"{code.co_filename}:{lineno}:{column} ({code.co_name})"


def _caller_location() -> tuple[CodeType, int, int] | None:
    """Where the user created the scope: (code, instruction, line) of the first
    frame outside jaxport, formatted only when asked for (it walks the code)."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
    return None if frame is None else (frame.f_code, frame.f_lasti, frame.f_lineno)


class SymbolicScope:
    """Identifies a family of symbolic dimensions and holds their constraints.

    Args:
        constraints: strings of the form ``e1 >= e2``, ``e1 <= e2`` or
            ``e1 == e2``, where the left-hand side of an equality is a term
            times a coefficient (``h``, ``4*a``, ``a*b``, ``floordiv(a, b)``).

    Raises:
        ConstraintError: a constraint is malformed, unsupported, or false.
        ShapeSpecSyntaxError: a side of a constraint does not parse.

    >>> scope = SymbolicScope(["h == 2*w"])
    >>> from jaxport.domain.symbolic import parse_shape_spec
    >>> parse_shape_spec("h, w", scope=scope)
    (2*w, w)
    """

    def __init__(self, constraints: Sequence[str] = ()) -> None:
        if isinstance(constraints, str):
            raise ConstraintError("The constraints must be a sequence of strings, not a string.")
        self._texts: tuple[str, ...] = tuple(constraints)
        self._where = _caller_location()
        self._location: str | None = None
        self._rules: list[_Rule] = []
        self._decider = BoundsDecider()
        self._constraints: tuple[Constraint, ...] = ()
        if self._texts:
            self._install()

    @property
    def constraints(self) -> tuple[Constraint, ...]:
        """The parsed constraints, in the order given."""
        return self._constraints

    @property
    def decider(self) -> BoundsDecider:
        """The bounds decision procedure of this scope."""
        return self._decider

    @property
    def location(self) -> str:
        """``file:line:column (function)`` where the scope was created."""
        if self._location is None:
            self._location = "(unknown)" if self._where is None else _frame_location(*self._where)
        return self._location

    def normalize(self, p: Poly) -> Poly:
        """Applies the equality rules to ``p`` until none matches."""
        if not self._rules:
            return p
        for _ in range(_MAX_REWRITE_ROUNDS):
            changed = False
            for rule in self._rules:
                rewritten = substitute_term(p, rule.pattern, rule.coefficient, rule.replacement)
                if rewritten is not None:
                    p, changed = rewritten, True
            if not changed:
                break
        return p

    def __str__(self) -> str:
        text = f"{id(self)} created at {self.location}"
        if self._texts:
            text += " with constraints:\n" + "\n".join(f"  {c}" for c in self._texts)
        return text

    __repr__ = __str__

    # ---- construction ----------------------------------------------------------

    def _install(self) -> None:
        parsed = [(text, *parse_constraint(text, scope=self)) for text in self._texts]
        built = []
        for text, lhs, relation, rhs in parsed:
            difference = rhs - lhs if relation == "<=" else lhs - rhs
            comparison = Comparison.EQ if relation == "==" else Comparison.GE
            built.append(Constraint(text, comparison, difference))
            if isinstance(difference, int) and (difference < 0 or comparison is Comparison.EQ and difference != 0):
                raise ConstraintError(f"Unsatisfiable explicit constraint: {text}")
        self._constraints = tuple(built)
        implied: list[Poly] = []
        for (text, lhs, relation, rhs), constraint in zip(parsed, built):
            if constraint.comparison is Comparison.EQ:
                self._add_rule(text, lhs, rhs)
                multiple = _multiple_of_mod_zero(_poly(lhs), _poly(rhs))
                if multiple is not None:  # as JAX: `mod(e, k) == 0` also gives `k*floordiv(e, k) == e`
                    self._add_rule(f"{multiple[0]} == {multiple[1]}", *multiple)
                    implied.append(multiple[0] - multiple[1])
        for constraint in built:
            if constraint.comparison is Comparison.GE:
                self._add_inequality(constraint)
            elif not isinstance(constraint.difference, int):
                # As in JAX, an equality also bounds: `4*a == b` gives `b >= 3*a`. The
                # difference as written (before the rules) keeps the term that the rule removes.
                implied.append(constraint.difference.poly)
        for raw in implied:
            self._decider.assume_nonnegative(raw)
            self._decider.assume_nonnegative(-raw)

    def _add_rule(self, text: str, lhs: DimExpr | Poly | int, rhs: DimExpr | Poly | int) -> None:
        left, right = self.normalize(_poly(lhs)), self.normalize(_poly(rhs))
        difference = left - right
        if difference.is_constant:
            if difference.const:
                raise ConstraintError(f"Unsatisfiable explicit constraint: {text}")
            return  # implied by the rules already installed
        if left.const or len(left.terms) != 1:
            raise ConstraintError(
                f"Invalid equality constraint: {lhs} == {rhs}. "
                "The left-hand-side must be of the form `term * coefficient`."
            )
        pattern, coefficient = left.terms[0]
        if any(t.divide(pattern) is not None for t, _ in right.terms):
            raise ConstraintError(
                f"Invalid equality constraint: {lhs} == {rhs}. "
                "The right-hand-side must not contain the left-hand-side."
            )
        new = _Rule(pattern, coefficient, right)
        updated = []
        for rule in self._rules:
            rewritten = substitute_term(rule.replacement, pattern, coefficient, right)
            updated.append(rule if rewritten is None else _Rule(rule.pattern, rule.coefficient, rewritten))
        self._rules = [*updated, new]
        self._decider = BoundsDecider()  # bounds computed before may mention the pattern

    def _add_inequality(self, constraint: Constraint) -> None:
        p = self.normalize(_poly(constraint.difference))
        if p.is_constant:
            if p.const < 0:
                raise ConstraintError(f"Unsatisfiable explicit constraint: {constraint.text}")
            return
        if not self._decider.assume_nonnegative(p):
            raise ConstraintError(
                f"Unsatisfiable explicit constraint: {constraint.text} contradicts the constraints "
                "before it or the implicit constraint that dimension variables are >= 1")


def _poly(x: DimExpr | Poly | int) -> Poly:
    if isinstance(x, Poly):
        return x
    return Poly.constant(x) if isinstance(x, int) else x.poly


def _multiple_of_mod_zero(lhs: Poly, rhs: Poly) -> tuple[Poly, Poly] | None:
    """For ``mod(e, k) == 0`` with a constant ``k``: ``(k*floordiv(e, k), e)``, else None."""
    if not (rhs.is_constant and rhs.const == 0 and not lhs.const and len(lhs.terms) == 1):
        return None
    term, coefficient = lhs.terms[0]
    factor = term.single_factor()
    if coefficient != 1 or factor is None or factor.op != MOD or not factor.operands[1].is_constant:
        return None
    e, k = factor.operands
    quotient = Term(((Factor.operation(FLOORDIV, e, k), 1),))
    return Poly.of({quotient: k.const}), e


def parse_shape_spec(
    spec: str,
    *,
    scope: Scope | None = None,
    like: Sequence[int | None] | None = None,
    expr_class: type[DimExpr] = DimExpr,
) -> tuple[DimSize, ...]:
    """Parses a symbolic shape such as ``"b, 2*h, _, ..."`` or ``"(b, 4)"``.

    Args:
        spec: comma-separated dimension expressions; the parentheses are optional.
        scope: the scope of the new dimensions; a new empty scope if None.
        like: the concrete shape that ``_`` and ``...`` take dimensions from.
        expr_class: the class of the symbolic dimensions built (an adapter's subclass).

    Returns:
        One int or symbolic dimension per dimension of the shape.

    Raises:
        ShapeSpecSyntaxError: the spec is malformed; the message quotes the spec
            and the position of the offending token.

    >>> parse_shape_spec("b + 1, floordiv(b, 2), max(b, 4), 3")
    (b + 1, floordiv(b, 2), max(b, 4), 3)
    >>> parse_shape_spec("_, b, ...", like=(2, None, 5, 6))
    (2, b, 5, 6)
    """
    return parse_shape(spec, scope=scope if scope is not None else SymbolicScope(), like=like,
                       expr_class=expr_class)
