"""Canonical polynomials over dimension variables and opaque operations.

A :class:`Poly` is a sum of integer multiples of :class:`Term` objects plus an
integer constant; a term is a product of :class:`Factor` objects raised to
positive powers; a factor is a variable or one of the operations
``floordiv``, ``mod``, ``max``, ``min`` applied to two polynomials. These
objects carry no scope and make no decisions: they are the normal form that
:class:`~jaxport.domain.symbolic.expr.DimExpr` wraps.

Ordering and printing reproduce what ``jax.export`` prints, so that
signatures read the same in both systems. Terms of a sum are printed from
the largest to the smallest and factors of a product from the smallest to
the largest, where the order compares sizes first:

* a variable has size 1; an operation has size 1 plus the sizes of its operands;
* a term has size ``sum(size(factor) * exponent + 1)``;
* a polynomial has size ``sum(abs(coefficient) * size(term) + 1)``, the
  constant counting as an empty term;

and then the parts, largest first (variables by name, operations by name and
operands). Each object's ``key`` encodes that order and its whole structure,
so keys also decide equality and hashing.

Division (:func:`divide`) applies the ``floordiv`` and ``mod`` simplification
rules of ``jax.export``, no more and no less, so that results print the same:
a constant divisor that divides every non-constant coefficient, or a divisor
that divides the dividend exactly (factors taken as independent unknowns);
anything else stays an opaque operation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final, TypeAlias

FLOORDIV: Final = "floordiv"
MOD: Final = "mod"
MAX: Final = "max"
MIN: Final = "min"
OPERATIONS: Final = frozenset({FLOORDIV, MOD, MAX, MIN})

#: Structural sort keys: nested tuples compared lexicographically.
Key: TypeAlias = tuple[object, ...]


class Factor:
    """A variable, or an operation on two polynomials (kept opaque by the algebra)."""

    __slots__ = ("var", "op", "operands", "size", "key", "vars", "_hash")

    def __init__(self, var: str | None, op: str | None, operands: tuple[Poly, ...]) -> None:
        self.var = var
        self.op = op
        self.operands = operands
        if var is not None:
            self.size: int = 1
            self.key: Key = (1, 0, var)
            self.vars: frozenset[str] = frozenset((var,))
        else:
            self.size = 1 + sum(o.size for o in operands)
            self.key = (self.size, 1, op, tuple(o.key for o in operands))
            self.vars = frozenset().union(*(o.vars for o in operands))
        self._hash = hash(self.key)

    @staticmethod
    def variable(name: str) -> Factor:
        """The factor for variable ``name``."""
        return Factor(name, None, ())

    @staticmethod
    def operation(op: str, left: Poly, right: Poly) -> Factor:
        """The (unsimplified) factor ``op(left, right)``."""
        assert op in OPERATIONS, op
        return Factor(None, op, (left, right))

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, Factor) and self.key == other.key)

    def __hash__(self) -> int:
        return self._hash

    def __str__(self) -> str:
        if self.var is not None:
            return self.var
        left, right = self.operands
        return f"{self.op}({left}, {right})"

    __repr__ = __str__


class Term:
    """A product of factors with positive exponents (the empty product is 1)."""

    __slots__ = ("factors", "size", "degree", "key", "_vars", "_hash")

    def __init__(self, factors: tuple[tuple[Factor, int], ...]) -> None:
        self.factors = factors  # ascending by factor key
        self.size: int = sum(f.size * e + 1 for f, e in factors)
        self.degree: int = sum(e for _, e in factors)
        self.key: Key = (self.size, tuple((f.key, e) for f, e in reversed(factors)))
        self._vars: frozenset[str] | None = None
        self._hash = hash(self.key)

    @property
    def vars(self) -> frozenset[str]:
        """The variables of the factors, including those inside operations."""
        if self._vars is None:
            self._vars = frozenset().union(*(f.vars for f, _ in self.factors))
        return self._vars

    @staticmethod
    def of(powers: Mapping[Factor, int]) -> Term:
        """The term with the given factor exponents (zero exponents dropped)."""
        items = sorted(((f, e) for f, e in powers.items() if e), key=lambda fe: fe[0].key)
        return Term(tuple(items))

    def single_factor(self) -> Factor | None:
        """The factor when the term is exactly one factor with exponent 1."""
        if len(self.factors) == 1 and self.factors[0][1] == 1:
            return self.factors[0][0]
        return None

    def __mul__(self, other: Term) -> Term:
        if not other.factors:
            return self
        if not self.factors:
            return other
        powers = dict(self.factors)
        for f, e in other.factors:
            powers[f] = powers.get(f, 0) + e
        return Term.of(powers)

    def divide(self, other: Term) -> Term | None:
        """The term ``self / other`` when ``other`` divides ``self``, else None."""
        powers = dict(self.factors)
        for f, e in other.factors:
            have = powers.get(f, 0)
            if have < e:
                return None
            powers[f] = have - e
        return Term.of(powers)

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, Term) and self.key == other.key)

    def __hash__(self) -> int:
        return self._hash

    def __str__(self) -> str:
        return "*".join(str(f) if e == 1 else f"{f}^{e}" for f, e in self.factors)

    __repr__ = __str__


ONE: Final = Term(())


class Poly:
    """``sum(coefficient * term) + const`` in canonical (sorted, merged) form."""

    __slots__ = ("terms", "const", "_size", "_key", "_vars", "_hash", "_str")

    def __init__(self, terms: tuple[tuple[Term, int], ...], const: int) -> None:
        self.terms = terms  # descending by term key; nonzero coefficients; no ONE
        self.const = const
        self._size: int | None = None
        self._key: Key | None = None
        self._vars: frozenset[str] | None = None
        self._hash: int | None = None
        self._str: str | None = None

    @property
    def size(self) -> int:
        """The size used by the printing order (see the module docstring)."""
        if self._size is None:
            self._size = sum(abs(c) * t.size + 1 for t, c in self.terms) + (1 if self.const else 0)
        return self._size

    @property
    def key(self) -> Key:
        """The structural sort key; equal keys mean equal polynomials."""
        if self._key is None:
            items = tuple((t.key, c) for t, c in self.terms)
            self._key = (self.size, items + (((ONE.key, self.const),) if self.const else ()))
        return self._key

    @property
    def vars(self) -> frozenset[str]:
        """The variables, including those inside operations."""
        if self._vars is None:
            self._vars = frozenset().union(*(t.vars for t, _ in self.terms))
        return self._vars

    @staticmethod
    def of(coeffs: Mapping[Term, int], const: int = 0) -> Poly:
        """The canonical polynomial from term coefficients (``ONE`` adds to the constant)."""
        const += coeffs.get(ONE, 0)
        items = [(t, c) for t, c in coeffs.items() if c and t is not ONE and t.factors]
        items.sort(key=lambda tc: tc[0].key, reverse=True)
        return Poly(tuple(items), const)

    @staticmethod
    def constant(value: int) -> Poly:
        """The constant polynomial ``value``."""
        return Poly((), value)

    @staticmethod
    def of_factor(factor: Factor) -> Poly:
        """The polynomial consisting of one factor."""
        return Poly(((Term(((factor, 1),)), 1),), 0)

    @staticmethod
    def variable(name: str) -> Poly:
        """The polynomial consisting of variable ``name`` (shared, immutable)."""
        p = _VARIABLES.get(name)
        if p is None:
            p = _VARIABLES[name] = Poly.of_factor(Factor.variable(name))
        return p

    def add_constant(self, k: int) -> Poly:
        """``self + k``."""
        return self if k == 0 else Poly(self.terms, self.const + k)

    @property
    def is_constant(self) -> bool:
        """Whether the polynomial has no variable term."""
        return not self.terms

    def coefficients(self) -> dict[Term, int]:
        """The terms as a fresh dict, the constant under ``ONE`` when nonzero."""
        out = dict(self.terms)
        if self.const:
            out[ONE] = self.const
        return out

    def __add__(self, other: Poly) -> Poly:
        if not other.terms:
            return self if not other.const else Poly(self.terms, self.const + other.const)
        coeffs = dict(self.terms)
        for t, c in other.terms:
            coeffs[t] = coeffs.get(t, 0) + c
        return Poly.of(coeffs, self.const + other.const)

    def scale(self, k: int) -> Poly:
        """``k * self``."""
        if k == 1:
            return self
        if k == 0:
            return ZERO
        return Poly(tuple((t, c * k) for t, c in self.terms), self.const * k)

    def __neg__(self) -> Poly:
        return self.scale(-1)

    def __sub__(self, other: Poly) -> Poly:
        return self + other.scale(-1)

    def __mul__(self, other: Poly) -> Poly:
        if not other.terms:
            return self.scale(other.const)
        if not self.terms:
            return other.scale(self.const)
        coeffs: dict[Term, int] = {}
        for t1, c1 in self.coefficients().items():
            for t2, c2 in other.coefficients().items():
                t = t1 * t2
                coeffs[t] = coeffs.get(t, 0) + c1 * c2
        return Poly.of(coeffs)

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, Poly) and self.const == other.const and self.terms == other.terms)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash((self.terms, self.const))
        return self._hash

    def __str__(self) -> str:
        if self._str is None:
            self._str = _format_poly(self)
        return self._str

    __repr__ = __str__


ZERO: Final = Poly((), 0)
_VARIABLES: dict[str, Poly] = {}


def _format_poly(p: Poly) -> str:
    """Prints like jax: ``2*b + 1``, ``- b + 4``, ``floordiv(b, - 2)``, ``0``."""
    parts: list[tuple[int, str]] = [(c, str(t)) for t, c in p.terms]
    if p.const or not parts:
        parts.append((p.const, ""))
    out: list[str] = []
    for i, (c, text) in enumerate(parts):
        magnitude = abs(c)
        body = str(magnitude) if not text else text if magnitude == 1 else f"{magnitude}*{text}"
        if i == 0:
            out.append(f"- {body}" if c < 0 else body)
        else:
            out.append(f" - {body}" if c < 0 else f" + {body}")
    return "".join(out)


def substitute_term(p: Poly, pattern: Term, k: int, replacement: Poly) -> Poly | None:
    """Rewrites every ``m * k * pattern * rest`` of ``p`` into ``m * rest * replacement``.

    Returns None when no term of ``p`` matches (a multiple of ``k`` times a
    multiple of ``pattern``).
    """
    changed = False
    result = Poly.constant(p.const)
    kept: dict[Term, int] = {}
    for t, c in p.terms:
        rest = t.divide(pattern)
        if rest is None or c % k:
            kept[t] = kept.get(t, 0) + c
            continue
        changed = True
        result = result + Poly.of({rest: c // k}) * replacement
    if not changed:
        return None
    return result + Poly.of(kept)


def iter_factors(p: Poly) -> Iterable[Factor]:
    """Every factor of ``p``, recursively through operands, outermost first."""
    for t, _ in p.terms:
        for f, _ in t.factors:
            yield f
            for operand in f.operands:
                yield from iter_factors(operand)


def _division_key(term: Term) -> tuple[int, object]:
    """A graded lexicographic monomial order, used only for exact division."""
    return (term.degree, term.key[1])


def _leading(coeffs: Mapping[Term, int]) -> tuple[Term, int]:
    term = max(coeffs, key=_division_key)
    return term, coeffs[term]


def exact_quotient(dividend: Poly, divisor: Poly) -> Poly | None:
    """The polynomial ``q`` with ``dividend == q * divisor``, or None if there is none.

    Factors are treated as independent unknowns, as jax does: for example
    ``(a*b + a) / (b + 1) == a``.
    """
    if divisor.is_constant:
        k = divisor.const
        if k == 0 or dividend.const % k or any(c % k for _, c in dividend.terms):
            return None
        return Poly(tuple((t, c // k) for t, c in dividend.terms), dividend.const // k)
    remainder = dividend.coefficients()
    lead_term, lead_coeff = _leading(divisor.coefficients())
    quotient: dict[Term, int] = {}
    while remainder:
        term, coeff = _leading(remainder)
        factor = term.divide(lead_term)
        if factor is None or coeff % lead_coeff:
            return None
        multiple = coeff // lead_coeff
        quotient[factor] = quotient.get(factor, 0) + multiple
        for t, c in divisor.coefficients().items():
            product = t * factor
            value = remainder.get(product, 0) - c * multiple
            if value:
                remainder[product] = value
            else:
                remainder.pop(product, None)
    return Poly.of(quotient)


def divide(dividend: Poly, divisor: Poly, op: str) -> Poly:
    """``floordiv`` or ``mod`` of two polynomials, simplified where exact.

    A constant divisor ``k`` that divides every non-constant coefficient
    gives ``(p - c)/k + c // k`` and ``c % k``; a divisor that divides the
    dividend exactly gives the quotient and ``0``; otherwise the result is
    the opaque operation.

    Raises:
        ZeroDivisionError: the divisor is the constant 0.
    """
    if divisor.is_constant:
        k = divisor.const
        if k == 0:
            raise ZeroDivisionError("integer division or modulo by zero")
        if all(c % k == 0 for _, c in dividend.terms):
            if op == MOD:
                return Poly.constant(dividend.const % k)
            return Poly(tuple((t, c // k) for t, c in dividend.terms), dividend.const // k)
    else:
        quotient = exact_quotient(dividend, divisor)
        if quotient is not None:
            return quotient if op == FLOORDIV else ZERO
    return Poly.of_factor(Factor.operation(op, dividend, divisor))
