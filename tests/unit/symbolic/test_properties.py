"""Property tests: normalisation, printing and decisions agree with plain integer arithmetic.

Each random expression tree is built twice: as a symbolic dimension (which
normalises it) and as a plain Python computation on ints (floor division and
modulo as Python defines them). For random values of the variables (at
least 1), evaluating the normal form must give the plain value.
"""

from __future__ import annotations

from typing import Any, Union

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from jaxport.domain.symbolic import (
    DimExpr,
    DimSize,
    SymbolicScope,
    dim_max,
    dim_min,
    is_nonnegative,
    parse_shape_spec,
)

VARS = ("a", "b", "c")
Tree = Union[tuple[str, Any], tuple[str, Any, Any]]

leaves = st.one_of(
    st.sampled_from(VARS).map(lambda v: ("var", v)),
    st.integers(-5, 8).map(lambda k: ("const", k)),
)


def _extend(children: st.SearchStrategy[Tree]) -> st.SearchStrategy[Tree]:
    binary = st.tuples(st.sampled_from(["add", "sub", "mul", "max", "min", "floordiv", "mod"]), children, children)
    by_constant = st.tuples(st.sampled_from(["floordiv", "mod"]), children,
                            st.integers(-4, 5).filter(bool).map(lambda k: ("const", k)))
    return st.one_of(binary, by_constant, st.tuples(st.just("neg"), children))


trees = st.recursive(leaves, _extend, max_leaves=10)
values = st.fixed_dictionaries({v: st.integers(1, 12) for v in VARS})

OPS = {
    "add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
    "floordiv": lambda x, y: x // y, "mod": lambda x, y: x % y,
}


def build(tree: Tree, env: dict[str, Any], maximum: Any, minimum: Any) -> Any:
    kind = tree[0]
    if kind == "var":
        return env[tree[1]]
    if kind == "const":
        return tree[1]
    if kind == "neg":
        return -build(tree[1], env, maximum, minimum)
    x = build(tree[1], env, maximum, minimum)
    y = build(tree[2], env, maximum, minimum)  # type: ignore[misc]
    if kind == "max":
        return maximum(x, y)
    if kind == "min":
        return minimum(x, y)
    return OPS[kind](x, y)


SCOPE = SymbolicScope()
SYMBOLS: dict[str, Any] = dict(zip(VARS, parse_shape_spec(", ".join(VARS), scope=SCOPE)))


def symbolic(tree: Tree) -> DimSize:
    return build(tree, SYMBOLS, dim_max, dim_min)  # type: ignore[no-any-return]


def plain(tree: Tree, env: dict[str, int]) -> int | None:
    try:
        value: int = build(tree, dict(env), max, min)
    except ZeroDivisionError:
        return None
    return value


COMMON = settings(max_examples=300, deadline=None, derandomize=True,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@COMMON
@given(trees, values)
def test_evaluating_the_normal_form_gives_the_plain_value(tree: Tree, env: dict[str, int]) -> None:
    expected = plain(tree, env)
    assume(expected is not None)
    expr = symbolic(tree)
    got = expr._evaluate(env) if isinstance(expr, DimExpr) else expr
    assert got == expected, f"{expr} at {env}"


@COMMON
@given(trees)
def test_printing_then_parsing_gives_the_same_expression(tree: Tree) -> None:
    try:
        expr = symbolic(tree)
    except ZeroDivisionError:
        assume(False)
        raise
    (again,) = parse_shape_spec(str(expr), scope=SCOPE)
    assert str(again) == str(expr)
    assert again == expr


@COMMON
@given(trees, values)
def test_decisions_are_sound(tree: Tree, env: dict[str, int]) -> None:
    expected = plain(tree, env)
    assume(expected is not None)
    assert expected is not None
    expr = symbolic(tree)
    verdict = is_nonnegative(expr)
    if verdict is not None:
        assert verdict == (expected >= 0), f"{expr} >= 0 decided {verdict} but is {expected} at {env}"
