"""Constraints that behave as jax.export's: equalities used as bounds,
``mod(e, k) == 0``, constraints over rewritten or absent variables."""

from __future__ import annotations

import math

import pytest

from jaxport.domain.symbolic import (
    DimensionEvaluationError,
    ShapeAssertionError,
    SymbolicScope,
    build_plan,
    parse_shape_spec,
    solve_call,
)


def test_an_equality_also_bounds_comparisons() -> None:
    a, b = parse_shape_spec("a, b", scope=SymbolicScope(["4 * a == b"]))
    assert b >= a and b >= 3 * a and b >= 4 * a and 5 * a >= b and 9 * a >= 2 * b


def test_mod_zero_makes_the_multiple_of_the_quotient_equal() -> None:
    b, c = parse_shape_spec("b, c", scope=SymbolicScope(["mod(b, 4) == 0"]))
    assert b == 4 * (b // 4)
    assert b * c == (b // 4) * c * 4
    assert b >= b // 4 and b >= 3 * (b // 4) and 2 * (b // 4) >= 0


def test_bounds_follow_the_constraints() -> None:
    a, = parse_shape_spec("a", scope=SymbolicScope(["a >= 2", "a <= 4"]))
    assert a.bounds() == (2, 4)  # type: ignore[union-attr]
    b, = parse_shape_spec("b")
    assert b.bounds() == (1, math.inf)  # type: ignore[union-attr]


def test_a_constraint_on_a_variable_absent_from_the_shapes_fails_the_plan() -> None:
    scope = SymbolicScope(["m >= m1"])
    shapes = (parse_shape_spec("m", scope=scope),)
    with pytest.raises(DimensionEvaluationError, match=(
            "Encountered dimension variable 'm1' that is not appearing in the shapes of the function "
            r"arguments.\nThe following dimension variables are appearing in the shapes of the function "
            r"arguments: \['m'\].")):
        build_plan(shapes, ("args[0]",))


def test_a_constraint_over_a_rewritten_variable_is_checked_with_its_rewriting() -> None:
    scope = SymbolicScope(["max(a, b) == 4", "a == b"])
    shapes = (parse_shape_spec("a, b", scope=scope),)
    solve_call(shapes, [(4, 4)], ("args[0]",))
    with pytest.raises(ShapeAssertionError, match=r"Expected 'max\(a, b\) - 4' to be equal to 0, but found -1"):
        solve_call(shapes, [(3, 3)], ("args[0]",))
    same = SymbolicScope(["a == b"])
    solve_call((parse_shape_spec("a, b", scope=same),), [(3, 3)], ("args[0]",))


def test_constraints_that_refer_back_to_their_own_terms_terminate() -> None:
    scope = SymbolicScope(["mod(a + mod(a, 2), -2) == 0", "-2*floordiv(a + mod(a, 2), -2) == a + mod(a, 2)"])
    a, = parse_shape_spec("a", scope=scope)
    assert a >= 1
    assert (a + a % 2) // 2 >= 0
