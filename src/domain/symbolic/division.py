"""Division of polynomials: the ``floordiv`` and ``mod`` simplification rules.

These reproduce what ``jax.export`` simplifies, no more and no less, so that
results print the same: a constant divisor that divides every non-constant
coefficient, or a divisor that divides the dividend exactly (factors taken
as independent unknowns); anything else stays an opaque operation.
"""

from __future__ import annotations

from collections.abc import Mapping

from .core import FLOORDIV, MOD, ZERO, Factor, Poly, Term


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
