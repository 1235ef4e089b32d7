"""Errors of the symbolic-shape domain, with JAX's wording.

The symbolic-shape level of :mod:`jaxport.domain.errors` (their base class),
re-exported, as those are, by :mod:`jaxport.errors`.

An expression raises the inconclusive-comparison error that its class names
(``DimExpr.inconclusive_error``), so that the JAX adapter's subclass raises a
class that also inherits JAX's ``InconclusiveDimensionOperation`` (JAX catches
that class in several places) while the domain stays free of JAX imports.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import JaxportError
from ..jax_docs import DocPages


def inconclusive_explanation(docs: DocPages) -> str:
    """The explanation that ends an inconclusive comparison's message (as in jax.export)."""
    return ("This error arises for comparison operations with shapes that\n"
            "are non-constant, and the result of the operation cannot be represented as\n"
            "a boolean value for all values of the symbolic dimensions involved.\n"
            "\n"
            f"Please see {docs.shape_poly}#comparison-of-symbolic-dimensions-is-partially-supported\n"
            "for more details.\n")


def inconclusive_comparison(comparison: str, suggestion: str, scope: str | None, docs: DocPages) -> str:
    """The message of an inconclusive comparison (``"'b' >= '4'"``), as jax.export words it.

    Args:
        comparison: the comparison, its operands quoted.
        suggestion: the constraint that would decide it.
        scope: the scope's text when it holds constraints, else None.
        docs: the pages the message cites.
    """
    used = f"Using symbolic scope {scope}\n" if scope is not None else ""
    return (f"Symbolic dimension comparison {comparison} is inconclusive.\n"
            f"{used}{inconclusive_explanation(docs)}"
            f"If it holds for all the shapes you intend to use, consider adding the "
            f"constraint '{suggestion}' to the SymbolicScope.\n")


def not_constant(dim: str, docs: DocPages) -> str:
    """The message of a symbolic dimension used where a constant is required (``int(b)``)."""
    return (f"Symbolic dimension '{dim}' used in a context that requires a constant\n"
            + inconclusive_explanation(docs))


class InconclusiveDimensionError(JaxportError, ValueError):
    """A comparison or a conversion to ``int`` that symbolic reasoning cannot decide."""


class ScopeMixingError(JaxportError, ValueError):
    """Symbolic dimensions from different :class:`SymbolicScope` objects met in one operation."""

    def __init__(self, operation: str, expected: str, culprit: str, found: str, *, docs: DocPages,
                 expected_from: str = " ", culprit_from: str = "unknown") -> None:
        super().__init__(
            f"Invalid mixing of symbolic scopes {operation}.\n"
            f"Expected {expected_from}scope {expected}\n"
            f"and found for '{culprit}' ({culprit_from}) scope {found}\n"
            f"See {docs.shape_poly}#user-specified-symbolic-constraints."
        )


class ShapeSpecSyntaxError(JaxportError, ValueError):
    """A malformed symbolic shape specification."""

    def __init__(self, spec: str, dimension: int, reason: str, position: int) -> None:
        self.spec = spec
        self.dimension = dimension
        self.position = position
        super().__init__(
            f"syntax error in symbolic shape '{spec}' in dimension {dimension}: {reason}. "
            f"Parsed '{spec[:position]}', remaining '{spec[position:]}'."
        )


class ConstraintError(JaxportError, ValueError):
    """A symbolic constraint that is malformed, unsupported or unsatisfiable."""


class UnsolvableDimensionError(JaxportError, ValueError):
    """Dimension variables that cannot be computed from the argument shapes."""


class ShapeAssertionError(JaxportError, ValueError):
    """Actual argument shapes that violate the exported polymorphic specification."""


class DimensionEvaluationError(JaxportError, ValueError):
    """An expression refers to a dimension variable that has no value."""

    @classmethod
    def unknown_variable(cls, var: str, known: Sequence[str], docs: DocPages) -> DimensionEvaluationError:
        """The error for ``var``, absent from the argument shapes (which define ``known``), citing ``docs``."""
        return cls(
            f"Encountered dimension variable '{var}' that is not appearing in the shapes "
            "of the function arguments.\nThe following dimension variables are appearing "
            f"in the shapes of the function arguments: {list(known)}.\nPlease see "
            f"{docs.shape_poly}"
            "#dimension-variables-must-be-solvable-from-the-input-shapes for more details.")


class DimensionPowerError(JaxportError, ValueError):
    """A symbolic dimension raised to a negative or non-integer power."""

    def __init__(self, dim: str, power: object, kind: str) -> None:
        super().__init__(f"Symbolic dimension cannot be raised to {kind} powers: '{dim}' ** '{power}'")


class ShapeSpecTypeError(JaxportError, ValueError):
    """A shape specification that is neither None nor a string (JAX raises ValueError)."""

    def __init__(self, spec: object) -> None:
        super().__init__(f"polymorphic shape spec should be None or a string. Found {spec!r}.")
