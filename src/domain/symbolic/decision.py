"""The bounds decision procedure for symbolic dimensions.

:class:`BoundsDecider` computes an interval ``[lo, hi]`` that contains every
value a polynomial takes when each variable is at least 1 and the user's
inequality constraints hold. Comparisons are decided from these bounds:
``e >= 0`` is true when ``lo >= 0``, false when ``hi < 0``, and inconclusive
otherwise.

The lower bound of ``sum(c_i * t_i) + k`` is first the interval sum. It is
then improved by a small, budgeted search over sound rewrites that let terms
cancel:

* ``max(x, y) >= x`` and ``>= y`` (for positive coefficients); ``min`` dually;
  for the other sign, a case split: ``max(x, y)`` is ``x`` or ``y``, so the
  bound is the smaller of the bounds of both substitutions;
* ``floordiv(x, k)`` lies in ``[x/k - (|k|-1)/|k|, x/k]``;
  ``mod(x, k) == x - k*floordiv(x, k)``; ``mod(x, y) <= x`` and ``<= y - 1``
  for ``x >= 0, y >= 1``; ``floordiv(x, y) <= x`` for ``x >= 0, y >= 1``;
* ``e >= e - l * g`` for a user constraint ``g >= 0`` and ``l > 0`` chosen
  to cancel a term of ``e``.

For example ``b - min(b, h)`` has interval lower bound ``-inf`` but the
rewrite ``min(b, h) <= b`` gives ``0``. Results are cached per polynomial.
The upper bound is minus the lower bound of the negation.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from fractions import Fraction
from typing import Final, TypeAlias

from .core import FLOORDIV, MAX, MIN, MOD, Factor, Poly, Term

#: A bound: an int or a rational number, or ``-math.inf`` / ``math.inf``.
Num: TypeAlias = int | Fraction | float
#: A rational coefficient, kept as an int while it is one (much faster).
Rational: TypeAlias = int | Fraction
Interval: TypeAlias = tuple[Num, Num]
#: A linear form over terms with rational coefficients, plus a constant.
Form: TypeAlias = tuple[dict[Term, Rational], Rational]

INF: Final = math.inf
UNBOUNDED: Final[Interval] = (-INF, INF)
POSITIVE: Final[Interval] = (1, INF)
_SEARCH_BUDGET: Final = 64
_CACHE_LIMIT: Final = 50_000


def _mul(a: Num, b: Num) -> Num:
    if a == 0 or b == 0:
        return 0
    return a * b


def _div(a: Rational, b: Rational) -> Rational:
    """``a / b``, an int when exact."""
    if isinstance(a, int) and isinstance(b, int) and a % b == 0:
        return a // b
    return Fraction(a) / Fraction(b)


def _mul_interval(x: Interval, y: Interval) -> Interval:
    corners = [_mul(a, b) for a in x for b in y]
    return min(corners), max(corners)


def _pow_interval(x: Interval, e: int) -> Interval:
    lo, hi = x
    if e == 1 or lo >= 0 or e % 2 == 1:
        return lo**e, hi**e
    if hi <= 0:
        return hi**e, lo**e
    return 0, max(lo**e, hi**e)


def _intersect(x: Interval, y: Interval) -> Interval:
    return max(x[0], y[0]), min(x[1], y[1])


def _round_in(x: Interval) -> Interval:
    """Shrinks to the integers inside (values of dimension expressions are integers)."""
    lo, hi = x
    return (
        math.ceil(lo) if lo not in (INF, -INF) else lo,
        math.floor(hi) if hi not in (INF, -INF) else hi,
    )


def _floor(a: Num) -> Num:
    return a if a in (INF, -INF) else math.floor(a)


def _div_corner(a: Num, b: Num) -> Num:
    if b in (INF, -INF):
        return 0 if a not in (INF, -INF) else (a if b > 0 else -a)
    if a in (INF, -INF):
        return a if b > 0 else -a
    return Fraction(a) / Fraction(b)


def form_of(p: Poly, scale: Rational = 1) -> Form:
    """``scale * p`` as a linear form."""
    return {t: scale * c for t, c in p.terms}, scale * p.const


def _add_scaled(form: Form, other: Form, k: Rational) -> Form:
    """``form + k * other``, dropping terms that cancel."""
    terms = dict(form[0])
    for t, c in other[0].items():
        value = terms.get(t, 0) + k * c
        if value:
            terms[t] = value
        else:
            terms.pop(t, None)
    return terms, form[1] + k * other[1]


def _form_key(form: Form) -> tuple[object, ...]:
    return (tuple(sorted((t.key, c) for t, c in form[0].items())), form[1])


class BoundsDecider:
    """Bounds of polynomials under ``var >= 1`` and the user's inequality constraints.

    Attributes:
        search_steps: how many forms the rewriting search has examined so far,
            a measure of the work done that does not depend on the machine.
    """

    def __init__(self) -> None:
        self.search_steps = 0
        self._factor_bounds: dict[Factor, Interval] = {}
        self._term_bounds: dict[Term, Interval] = {}
        self._constraints: list[Form] = []
        self._poly_cache: dict[Poly, Interval] = {}
        self._factor_cache: dict[Factor, Interval] = {}
        self._term_cache: dict[Term, Interval] = {}
        self._active: set[Poly] = set()  # bounds being computed: a cycle gets interval bounds

    def assume_nonnegative(self, p: Poly) -> bool:
        """Adds the constraint ``p >= 0``; False when it contradicts the known bounds.

        A single-term constraint ``c*t + k >= 0`` becomes a bound on ``t``; a
        constraint with several terms is used by the rewriting search.
        """
        self._clear_caches()
        if len(p.terms) != 1:
            self._constraints.append(form_of(p))
            return self.bounds(p)[1] >= 0
        (term, c), k = p.terms[0], p.const
        limit = _div(-k, c)
        bound: Interval = (limit, INF) if c > 0 else (-INF, limit)
        factor = term.single_factor()
        if factor is not None:
            self._factor_bounds[factor] = _round_in(_intersect(self._factor_bounds.get(factor, UNBOUNDED), bound))
            lo, hi = self.factor_interval(factor)
        else:
            self._term_bounds[term] = _round_in(_intersect(self._term_bounds.get(term, UNBOUNDED), bound))
            lo, hi = self.term_interval(term)
        return lo <= hi

    def bounds(self, p: Poly) -> Interval:
        """An interval that contains every value of ``p``, with integer (or infinite) ends."""
        cached = self._poly_cache.get(p)
        if cached is not None:
            return cached
        if p.is_constant:
            result: Interval = (p.const, p.const)
        elif p in self._active:
            # The search for p's bounds came back to p (through a constraint and a
            # factor's operands): here p gets the plain interval bounds, no search.
            return _round_in((self._interval_lower(form_of(p)), -self._interval_lower(form_of(p, -1))))
        else:
            self._active.add(p)
            try:
                lo = self._lower(form_of(p))
                hi = -self._lower(form_of(p, -1))
            finally:
                self._active.discard(p)
            result = _round_in((lo, hi))
        if len(self._poly_cache) > _CACHE_LIMIT:
            self._clear_caches()
        self._poly_cache[p] = result
        return result

    def is_nonnegative(self, p: Poly) -> bool | None:
        """Decides ``p >= 0``: True, False, or None when inconclusive."""
        lo, hi = self.bounds(p)
        if lo >= 0:
            return True
        if hi < 0:
            return False
        return None

    def _clear_caches(self) -> None:
        self._poly_cache.clear()
        self._factor_cache.clear()
        self._term_cache.clear()

    # ---- interval arithmetic -------------------------------------------------

    def factor_interval(self, f: Factor) -> Interval:
        """Bounds of one factor: its operation's semantics, then the user's bounds."""
        cached = self._factor_cache.get(f)
        if cached is not None:
            return cached
        if f.var is not None:
            iv = POSITIVE
        else:
            x, y = (self.bounds(o) for o in f.operands)
            iv = _round_in(_operation_interval(f.op, x, y))
        result = _intersect(iv, self._factor_bounds.get(f, UNBOUNDED))
        self._factor_cache[f] = result
        return result

    def term_interval(self, t: Term) -> Interval:
        """Bounds of a product of factors, then the user's bounds on the product."""
        cached = self._term_cache.get(t)
        if cached is not None:
            return cached
        iv: Interval = (1, 1)
        for f, e in t.factors:
            iv = _mul_interval(iv, _pow_interval(self.factor_interval(f), e))
        result = _intersect(iv, self._term_bounds.get(t, UNBOUNDED))
        self._term_cache[t] = result
        return result

    def _interval_lower(self, form: Form) -> Num:
        total: Num = form[1]
        for t, c in form[0].items():
            lo, hi = self.term_interval(t)
            part = _mul(c, lo if c > 0 else hi)
            if part == -INF:
                return -INF
            total += part
        return total

    # ---- rewriting search ----------------------------------------------------

    def _lower(self, form: Form) -> Num:
        budget = [_SEARCH_BUDGET]
        if not self._constraints and all(
            (f := t.single_factor()) is None or f.var is not None for t in form[0]
        ):
            return self._interval_lower(form)
        return self._search(form, budget, {})

    def _search(self, form: Form, budget: list[int], seen: dict[object, Num]) -> Num:
        self.search_steps += 1
        key = _form_key(form)
        known = seen.get(key)
        if known is not None:
            return known
        best = self._interval_lower(form)
        seen[key] = best
        for alternatives in self._candidates(form):
            if budget[0] <= 0:
                break
            budget[0] -= len(alternatives)
            # The form is at least one of the alternatives: the smallest bound holds.
            best = max(best, min(self._search(a, budget, seen) for a in alternatives))
        seen[key] = best
        return best

    def _candidates(self, form: Form) -> Iterator[tuple[Form, ...]]:
        """Sound rewrites: ``form >= min(lower(a) for a in alternatives)``."""
        terms = form[0]
        for t, c in list(terms.items()):
            f = t.single_factor()
            if f is None or f.var is not None:
                continue
            base = _add_scaled(form, ({t: c}, 0), -1)
            if f.op in (MAX, MIN) and (f.op == MAX) != (c > 0):
                # max(x, y) is x or y: split the cases.
                yield tuple(_add_scaled(base, form_of(o), c) for o in f.operands)
            for replacement in self._replacements(f, need_lower=c > 0):
                yield (_add_scaled(base, replacement, c),)
        for g in self._constraints:
            for t, c in terms.items():
                gc = g[0].get(t)
                if gc is not None and (gc > 0) == (c > 0):
                    yield (_add_scaled(form, g, _div(-c, gc)),)
                    break

    def _replacements(self, f: Factor, *, need_lower: bool) -> Iterator[Form]:
        """Forms ``r`` with ``f >= r`` (need_lower) or ``f <= r`` (not need_lower)."""
        x, y = f.operands
        if f.op in (MAX, MIN):
            if (f.op == MAX) == need_lower:
                yield form_of(x)
                yield form_of(y)
        elif f.op == FLOORDIV:
            yield from self._floordiv_replacements(x, y, need_lower)
        elif f.op == MOD:
            yield from self._mod_replacements(x, y, need_lower)

    def _floordiv_replacements(self, x: Poly, y: Poly, need_lower: bool) -> Iterator[Form]:
        if y.is_constant and y.const:
            k = y.const
            quotient = form_of(x, Fraction(1, k))
            if need_lower:
                slack = Fraction(abs(k) - 1, abs(k))
                yield quotient[0], quotient[1] - slack
            else:
                yield quotient
        elif not need_lower and self.bounds(x)[0] >= 0 and self.bounds(y)[0] >= 1:
            yield form_of(x)

    def _mod_replacements(self, x: Poly, y: Poly, need_lower: bool) -> Iterator[Form]:
        if y.is_constant and y.const:
            quotient = Factor.operation(FLOORDIV, x, y)
            multiple: Form = ({Term(((quotient, 1),)): 1}, 0)
            yield _add_scaled(form_of(x), multiple, -y.const)
        if not need_lower and self.bounds(y)[0] >= 1:
            if self.bounds(x)[0] >= 0:
                yield form_of(x)
            if not y.is_constant:
                fy = form_of(y)
                yield fy[0], fy[1] - 1


def _operation_interval(op: str | None, x: Interval, y: Interval) -> Interval:
    if op == MAX:
        return max(x[0], y[0]), max(x[1], y[1])
    if op == MIN:
        return min(x[0], y[0]), min(x[1], y[1])
    if op == FLOORDIV:
        if y[0] > 0 or y[1] < 0:
            corners = [_div_corner(a, b) for a in x for b in y]
            lo, hi = _floor(min(corners)), _floor(max(corners))
            if (x[1] < 0 and y[0] > 0) or (x[0] > 0 and y[1] < 0):
                hi = min(hi, -1)  # a strictly negative quotient
            return lo, hi
        return UNBOUNDED
    if op == MOD:
        if y[0] > 0:
            hi = y[1] - 1
            return (0, min(hi, x[1]) if x[0] >= 0 else hi)
        if y[1] < 0:
            lo = y[0] + 1
            return (max(lo, x[0]) if x[1] <= 0 else lo, 0)
        return UNBOUNDED
    raise AssertionError(op)

