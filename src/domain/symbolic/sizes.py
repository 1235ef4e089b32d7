"""Operations on a dimension size, an ``int`` or a symbolic :class:`~.expr.DimExpr`.

The parser and the solver hold sizes without knowing which of the two each
is; these functions give the int result for ints and leave a symbolic one to
the expression's own operators (so an expression's subclass, the JAX
adapter's, carries through).

>>> from jaxport.domain.symbolic import parse_shape_spec
>>> b, = parse_shape_spec("b")
>>> dim_max(3, 4), dim_max(b, 1), dim_floordiv(2 * b, 2), dim_mod(7, 4)
(4, b, b, 3)
>>> is_symbolic_dim(b), is_symbolic_dim(4), is_nonnegative(b - 1), is_nonnegative(b - 2)
(True, False, True, None)
"""

from __future__ import annotations

from .expr import DimExpr, DimSize


def dim_max(a: DimSize, b: DimSize) -> DimSize:
    """``max(a, b)``, decided when the bounds allow, else the symbolic ``max(a, b)``."""
    if isinstance(a, DimExpr):
        return a.max(b)
    if isinstance(b, DimExpr):
        return b.rmax(a)
    return max(a, b)


def dim_min(a: DimSize, b: DimSize) -> DimSize:
    """``min(a, b)``, decided when the bounds allow, else the symbolic ``min(a, b)``."""
    if isinstance(a, DimExpr):
        return a.min(b)
    if isinstance(b, DimExpr):
        return b.rmin(a)
    return min(a, b)


def dim_floordiv(a: DimSize, b: DimSize) -> DimSize:
    """``a // b`` with Python's floor semantics."""
    result: DimSize = a // b
    return result


def dim_mod(a: DimSize, b: DimSize) -> DimSize:
    """``a % b`` with Python's semantics (the sign of the divisor)."""
    result: DimSize = a % b
    return result


def is_symbolic_dim(x: object) -> bool:
    """Whether ``x`` is a symbolic dimension (not an int)."""
    return isinstance(x, DimExpr)


def is_nonnegative(x: DimSize) -> bool | None:
    """Decides ``x >= 0``: True, False, or None when the bounds are inconclusive."""
    if isinstance(x, int):
        return x >= 0
    return x.scope.decider.is_nonnegative(x.poly)
