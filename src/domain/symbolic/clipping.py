"""The constraint that decides a dimension clipped by a constant, such as ``min(1024, t)``.

Slicing an array of constant size with a symbolic bound (``mask[:t, :t]`` of a
1024 x 1024 mask) gives a dimension ``min(1024, t)``. Without a constraint on
``t`` nothing decides it, so it neither broadcasts with ``t`` nor compares with
it, and JAX's error shows the expression but not the fix. :func:`clipping_note`
reads such an error message and names the constraints that decide each
``min``/``max`` of a dimension variable and a constant.

This module reads text only: it knows nothing of where the message came from.

>>> note = clipping_note("incompatible shapes: (b, t, 1), (1, min(1024, t), min(1024, t))")
>>> 'add constraints=("t <= 1024",)' in note and 'constraints=("t >= 1024",)' in note
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from .core import MAX, MIN, Factor, iter_factors
from jaxport.domain.errors import ConstraintError, DimensionPowerError, ShapeSpecSyntaxError
from .expr import DimExpr
from .parser import parse_shape
from .scope import SymbolicScope

_EXTREMUM_RE: Final = re.compile(r"\b(?:min|max)\(")


@dataclass(frozen=True, slots=True)
class Clip:
    """``min(constant, operand)`` or ``max(constant, operand)``, as text."""

    expression: str
    op: str
    operand: str
    constant: int

    @property
    def to_operand(self) -> str:
        """The constraint under which the expression is ``operand``."""
        return f"{self.operand} {'<=' if self.op == MIN else '>='} {self.constant}"

    @property
    def to_constant(self) -> str:
        """The constraint under which the expression is ``constant``."""
        return f"{self.operand} {'>=' if self.op == MIN else '<='} {self.constant}"

    def __str__(self) -> str:
        return (f"{self.expression} meets the constant {self.constant} through {self.op}, and nothing "
                f"decides which is smaller: if {self.to_operand} for every shape you mean to use, add "
                f"constraints=(\"{self.to_operand}\",) to the symbolic shape ({self.expression} is then "
                f"{self.operand}); if {self.to_constant}, add constraints=(\"{self.to_constant}\",) "
                f"(it is then {self.constant}).")


def clips_in(text: str) -> tuple[Clip, ...]:
    """Each ``min``/``max`` of a constant and a symbolic expression written in ``text``, once.

    >>> [c.to_operand for c in clips_in("(t, max(t, 8)) and min(1024, 2*t)")]
    ['t >= 8', '2*t <= 1024']
    """
    found: dict[str, Clip] = {}
    for match in _EXTREMUM_RE.finditer(text):
        end = _closing(text, match.end())
        if end is None:
            continue
        try:
            dims = parse_shape(f"({text[match.start():end]})", scope=SymbolicScope())
        except (ShapeSpecSyntaxError, ConstraintError, DimensionPowerError, ZeroDivisionError):
            continue  # prose that only looks like an expression
        for dim in dims:
            for factor in iter_factors(dim.poly) if isinstance(dim, DimExpr) else ():
                clip = _clip(factor)
                if clip is not None:
                    found.setdefault(clip.expression, clip)
    return tuple(found.values())


def _clip(factor: Factor) -> Clip | None:
    """``factor`` as a clip when it is ``min``/``max`` of a constant and a symbolic expression."""
    if factor.op not in (MIN, MAX):
        return None
    left, right = factor.operands
    if left.is_constant == right.is_constant:
        return None
    constant, operand = (left, right) if left.is_constant else (right, left)
    return Clip(str(factor), factor.op, str(operand), constant.const)


def clipping_note(text: str) -> str | None:
    """A note for an error whose message ``text`` shows clipped dimensions; None if it shows none."""
    clips = clips_in(text)
    return "\n".join(map(str, clips)) if clips else None


def _closing(text: str, start: int) -> int | None:
    """The index just past the parenthesis that closes the one before ``start``."""
    depth = 1
    for i in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i + 1
    return None
