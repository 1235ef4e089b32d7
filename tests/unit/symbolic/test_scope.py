"""Scopes: constraints, equality rewriting, and the mixing error."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from jaxport.domain.symbolic import (
    Comparison,
    ConstraintError,
    DimExpr,
    ScopeMixingError,
    ShapeSpecSyntaxError,
    SymbolicScope,
    dim_max,
    parse_shape_spec,
)

from .shapes import dims


def printed(spec: str, *constraints: str) -> list[str]:
    return [str(d) for d in dims(spec, *constraints)]


def test_the_scope_prints_where_it_was_created_and_its_constraints() -> None:
    scope = SymbolicScope(["a >= 4", "b <= 3", "a == 2*c"])
    pattern = (rf"{id(scope)} created at .*test_scope\.py:\d+:\d+ "
               r"\(test_the_scope_prints_where_it_was_created_and_its_constraints\) with constraints:\n"
               r"  a >= 4\n  b <= 3\n  a == 2\*c")
    assert re.fullmatch(pattern, str(scope)), str(scope)
    assert str(SymbolicScope()).endswith("(test_the_scope_prints_where_it_was_created_and_its_constraints)")


def test_constraints_keep_the_text_and_the_difference_the_user_wrote() -> None:
    scope = SymbolicScope(["b <= 10", "floordiv(a, b) == c", "a >= b"])
    texts = [(c.text, c.comparison, str(c.difference)) for c in scope.constraints]
    assert texts == [("b <= 10", Comparison.GE, "- b + 10"),
                     ("floordiv(a, b) == c", Comparison.EQ, "floordiv(a, b) - c"),
                     ("a >= b", Comparison.GE, "- b + a")]


@pytest.mark.parametrize(("spec", "constraints", "expected"), [
    ("h, w, h + w", ["h == 2*w"], ["2*w", "w", "3*w"]),
    ("a, b, 4*a, 8*a, 2*a", ["4*a == b"], ["a", "b", "b", "2*b", "2*a"]),
    ("a, b, c, a*b, 2*a*b, a*b*d", ["a*b == c"], ["a", "b", "c", "c", "2*c", "c*d"]),
    ("a, b, c, floordiv(a, b), floordiv(a,b)+1", ["floordiv(a, b) == c"], ["a", "b", "c", "c", "c + 1"]),
    ("a", ["a == 2"], ["2"]),
    ("a, b", ["a == b"], ["b", "b"]),
    ("a, b, c", ["b == c", "a == b"], ["c", "c", "c"]),
    # jax leaves 'a' as 'b' here; jaxport rewrites to a fixpoint, so a == b == c holds.
    ("a, b, c", ["a == b", "b == c"], ["c", "c", "c"]),
])
def test_equality_constraints_rewrite_expressions(spec: str, constraints: list[str], expected: list[str]) -> None:
    assert printed(spec, *constraints) == expected


def test_an_equality_makes_a_variable_a_constant_int() -> None:
    (a,) = dims("a", "a == 2")
    assert type(a) is int and a == 2


def test_rewritten_expressions_compare_equal() -> None:
    h, w = dims("h, w", "h == 2*w")
    assert h == 2 * w and h // 2 == w and h >= w + 1


@pytest.mark.parametrize(("constraint", "error", "message"), [
    ("a + b == c", ConstraintError, "Invalid equality constraint: b + a == c. The left-hand-side must be "
                                    "of the form `term * coefficient`."),
    ("2 == a", ConstraintError, "Invalid equality constraint: 2 == a."),
    ("a == 2*a", ConstraintError, "The right-hand-side must not contain the left-hand-side."),
    ("a == a + 1", ConstraintError, "Unsatisfiable explicit constraint: a == a + 1"),
    ("3 >= 4", ConstraintError, "Unsatisfiable explicit constraint: 3 >= 4"),
    ("a > 16", ConstraintError, "Constraint parsing error: must contain one of '==' or '>=' or '<='"),
    ("a", ConstraintError, "Constraint parsing error"),
    ("a >= 4 >= 3", ConstraintError, "Constraint parsing error"),
    ("a >= ", ShapeSpecSyntaxError, "syntax error in symbolic shape 'a >= ' in dimension 0: expecting one of "
                                    "{NAME, MINUS, NUMBER} but found ENDMARKER"),
    ("a >= 4 4", ShapeSpecSyntaxError, "but found NUMBER"),
])
def test_bad_constraints_raise_typed_errors(constraint: str, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as info:
        SymbolicScope([constraint])
    assert message in str(info.value)
    assert isinstance(info.value, ValueError)


def test_unsatisfiable_after_rewriting() -> None:
    with pytest.raises(ConstraintError, match="Unsatisfiable explicit constraint: b >= 5"):
        SymbolicScope(["a == 2", "b == a", "b >= 5"])


@pytest.mark.parametrize("constraints", [["b <= 0"], ["b >= 10", "b <= 5"], ["a >= b + 1", "b >= a"]])
def test_contradictory_inequalities_are_rejected(constraints: list[str]) -> None:
    with pytest.raises(ConstraintError, match=f"Unsatisfiable explicit constraint: {constraints[-1]} contradicts"):
        SymbolicScope(constraints)


def test_a_string_is_not_a_sequence_of_constraints() -> None:
    with pytest.raises(ConstraintError, match="sequence of strings"):
        SymbolicScope("a >= 2")


MIXING: list[tuple[str, Callable[[DimExpr, DimExpr], object]]] = [
    ("for linear combination", lambda x, y: x + y),
    ("for linear combination", lambda x, y: x - y),
    ("for operation mul", lambda x, y: x * y),
    ("for operation floordiv", lambda x, y: x // y),
    ("for operation mod", lambda x, y: x % y),
    ("for operation max", lambda x, y: dim_max(x, y)),
    ("when comparing 'a' >= 'b'", lambda x, y: x >= y),
]


@pytest.mark.parametrize(("operation", "op"), MIXING)
def test_mixing_scopes_is_an_error_naming_both(operation: str, op: Callable[[DimExpr, DimExpr], object]) -> None:
    (a,) = parse_shape_spec("a", scope=SymbolicScope())
    other = SymbolicScope(["b >= 8"])
    (b,) = parse_shape_spec("b", scope=other)
    assert isinstance(a, DimExpr) and isinstance(b, DimExpr)
    with pytest.raises(ScopeMixingError) as info:
        op(a, b)
    text = str(info.value)
    assert text.startswith(f"Invalid mixing of symbolic scopes {operation}.\nExpected  scope {a.scope}\n")
    assert f"and found for 'b' (unknown) scope {other}\n" in text
    assert "with constraints:\n  b >= 8" in text
    assert text.endswith("#user-specified-symbolic-constraints.")
    assert isinstance(info.value, ValueError)


def test_reusing_a_scope_allows_mixing() -> None:
    scope = SymbolicScope(["a >= 8"])
    (a,) = parse_shape_spec("a", scope=scope)
    (b,) = parse_shape_spec("b", scope=scope)
    assert str(a + b) == "b + a"
