"""Comparisons decided by the bounds procedure, and the inconclusive error."""

from __future__ import annotations

import re

import pytest

from jaxport.domain.symbolic import (
    DimExpr,
    InconclusiveDimensionError,
    dim_max,
    dim_min,
)

from .shapes import dims, sym, syms


def test_variables_are_at_least_one() -> None:
    a, b = syms("a, b")
    assert b >= 1 and b >= 0 and b > 0 and not (b < 1) and not (b <= 0)
    assert 2 * a + b >= 3 and a + 2 >= 3 and a * 2 >= 1 and a + b >= 2
    assert b // 4 >= 0 and b * b >= 1 and (a * b >= 1)
    assert (b >= -5) is True and (b < -5) is False


@pytest.mark.parametrize("text", ["b >= 2", "a >= b", "a - b >= 0", "b*h >= b", "b//2 >= 1", "b%3 <= 1"])
def test_undecidable_comparisons_are_inconclusive(text: str) -> None:
    a, b, h = syms("a, b, h")
    env = {"a": a, "b": b, "h": h}
    with pytest.raises(InconclusiveDimensionError, match="is inconclusive"):
        eval(text, {}, env)


def test_the_inconclusive_message_follows_jax_and_suggests_a_constraint() -> None:
    b = sym("b")
    with pytest.raises(InconclusiveDimensionError) as info:
        b >= 2
    assert str(info.value) == (
        "Symbolic dimension comparison 'b' >= '2' is inconclusive.\n"
        "This error arises for comparison operations with shapes that\n"
        "are non-constant, and the result of the operation cannot be represented as\n"
        "a boolean value for all values of the symbolic dimensions involved.\n"
        "\n"
        "Please see https://docs.jax.dev/en/latest/501/shape-polymorphism.html"
        "#comparison-of-symbolic-dimensions-is-partially-supported\n"
        "for more details.\n"
        "If it holds for all the shapes you intend to use, consider adding the "
        "constraint 'b >= 2' to the SymbolicScope.\n"
    )


@pytest.mark.parametrize(("op", "suggestion"), [
    (lambda a, b: a > b, "a >= b + 1"), (lambda a, b: a < b, "a <= b - 1"),
    (lambda a, b: a <= b, "a <= b"), (lambda a, b: a > 3, "a >= 4"),
])
def test_the_suggested_constraint_uses_the_supported_relations(op: object, suggestion: str) -> None:
    a, b = syms("a, b")
    with pytest.raises(InconclusiveDimensionError, match=re.escape(f"constraint '{suggestion}'")):
        op(a, b)  # type: ignore[operator]


def test_the_inconclusive_message_shows_the_scope_constraints() -> None:
    (a,) = dims("a", "a >= 16")
    with pytest.raises(InconclusiveDimensionError) as info:
        a >= 17
    text = str(info.value)
    assert text.startswith("Symbolic dimension comparison 'a' >= '17' is inconclusive.\nUsing symbolic scope ")
    assert "with constraints:\n  a >= 16\nThis error arises" in text


def test_max_and_min_are_decided_against_their_operands() -> None:
    b, h = syms("b, h")
    assert b >= dim_min(b, h)
    assert dim_max(b, h) >= h and dim_max(b, h) >= b
    assert b - dim_min(b, 4) >= 0
    assert dim_max(b, h) >= dim_min(b, h)
    assert dim_max(b, h) - b >= 0
    assert dim_max(b, h) <= b + h
    assert dim_min(b, h) <= dim_max(b, h) + 3
    assert dim_max(b, h) + 1 > dim_min(h, b)


def test_floordiv_and_mod_are_bounded() -> None:
    b, h, z = syms("b, h, z")
    assert b >= b // 2 and b - 2 * (b // 2) >= 0 and b - 2 * (b // 2) <= 1
    assert b % 3 < 3 and b % 3 >= 0 and b >= b % 3
    assert (b // 2) * 2 + b % 2 == b
    assert (dim_max(h % 3, z // 4) >= 4 * z) is False
    assert (dim_floordiv_neg := -2 // h) <= -1 and dim_floordiv_neg >= -2


def test_user_inequalities_bound_variables() -> None:
    (b,) = dims("b", "b >= 16", "b <= 1024")
    assert b >= 16 and b > 15 and b <= 1024 and b < 1025
    assert 2 * b >= 32 and dim_max(b, 10) == b and dim_min(b, 2000) == b
    with pytest.raises(InconclusiveDimensionError):
        b >= 17


def test_user_inequalities_between_expressions_are_used() -> None:
    a, b = syms("a, b", "a >= b")
    assert a >= b and 2 * a >= 2 * b and a + 1 >= b and a + 1 > b
    assert dim_max(a, b) == a and dim_min(a, b) == b
    a, b = syms("a, b", "a >= b + 8")
    assert a - b >= 8 and a >= 9


def test_constraints_on_composite_terms() -> None:
    b, h = syms("b, h", "b*h >= 10", "floordiv(b, 2) >= 3")
    assert b * h >= 10 and b // 2 >= 3 and b * h + b >= 11


def test_decisions_on_wide_expressions_search_few_forms() -> None:
    names = [f"v{i}" for i in range(12)]
    vs = syms(", ".join(names))
    total = sum(dim_max(v, 2 + i) for i, v in enumerate(vs))
    assert total >= sum(vs)
    assert sum(dim_min(v, 3) for v in vs) <= sum(vs)
    # Each max splits the search in two: without its budget it examines over a
    # million forms here.
    assert vs[0].scope.decider.search_steps <= 100 * len(names)


def test_an_expression_raises_the_inconclusive_error_that_its_class_names() -> None:
    class AdapterError(InconclusiveDimensionError):
        pass

    class AdapterDim(DimExpr):
        __slots__ = ()
        inconclusive_error = AdapterError

    b = AdapterDim.variable("b", sym("b").scope)
    with pytest.raises(AdapterError, match="comparison 'b' >= '2'"):
        b >= 2
    with pytest.raises(AdapterError, match="requires a constant"):
        int(b)
    with pytest.raises(AdapterError):
        b + 1 >= 3  # a derived expression keeps its class
    with pytest.raises(InconclusiveDimensionError) as plain:
        sym("b") >= 2
    assert type(plain.value) is InconclusiveDimensionError
