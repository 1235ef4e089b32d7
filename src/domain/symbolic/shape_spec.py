"""The public entry for parsing symbolic shapes: a spec, and optionally the scope it lives in.

It sits above both :mod:`.parser` and :mod:`.scope` (a scope parses its constraint texts with the
parser), so that making the default scope adds no import cycle.
"""

from __future__ import annotations

from collections.abc import Sequence

from .expr import DimExpr, DimSize, Scope
from .parser import parse_shape
from .scope import SymbolicScope


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
