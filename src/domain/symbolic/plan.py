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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias, Union

from .expr import Comparison, DimExpr

__all__ = [
    "ArgDim",
    "Comparison",
    "PlanValue",
    "Remainder",
    "ShapeAssertion",
    "ShapePlan",
    "VarDerivation",
    "format_shape",
]


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
        for step in self.steps:
            if isinstance(step, VarDerivation) and step.var == var:
                return step
        raise KeyError(var)


def format_shape(shape: Sequence[object]) -> str:
    """A shape as JAX prints a tuple of dimensions: ``(b, 4)``, ``(2*b + 1,)``."""
    inner = ", ".join(str(d) for d in shape)
    return f"({inner},)" if len(shape) == 1 else f"({inner})"
