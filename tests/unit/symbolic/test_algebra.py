"""The algebra of symbolic dimensions: normal forms, equality, hashing, the JAX protocol."""

from __future__ import annotations

import copy
import operator
from typing import Any

import pytest

from jaxport.domain.symbolic import (
    DimExpr,
    DimensionPowerError,
    InconclusiveDimensionError,
    PythonOps,
    SymbolicScope,
    is_symbolic_dim,
    parse_shape_spec,
)

from .shapes import dims, sym, syms


def test_equal_expressions_compare_and_hash_equal() -> None:
    b, h = syms("b, h")
    assert 2 * b + 1 == 1 + b + b
    assert hash(2 * b + 1) == hash(1 + b + b)
    assert b * h == h * b and hash(b * h) == hash(h * b)
    assert (b + h) * (b - h) == b * b - h * h
    assert len({2 * b + 1, 1 + b + b, b + b + 1}) == 1


def test_equality_never_raises_and_is_false_when_not_provably_zero() -> None:
    b, h = syms("b, h")
    assert (b == h) is False and (b != h) is True
    assert (b == 1) is False and (b + 1 == b) is False
    assert (b == "x") is False and (b == 2.5) is False and (b == None) is False  # noqa: E711
    assert b == (2 * b) // 2


def test_equality_uses_the_bounds_when_the_difference_is_provably_zero() -> None:
    b, z = syms("b, z")
    assert -1 // b == -1
    assert z % 2 // 3 == 0
    assert b % 1 == 0


def test_dimensions_of_different_scopes_are_never_equal() -> None:
    (a1,), (a2,) = dims("a"), dims("a")
    assert a1 != a2 and str(a1) == str(a2)


def test_results_are_built_with_the_subclass() -> None:
    class Sub(DimExpr):
        __slots__ = ()

    scope = SymbolicScope()
    b, h = parse_shape_spec("b, h", scope=scope, expr_class=Sub)
    assert isinstance(b, Sub) and isinstance(h, Sub)
    derived = [b + 1, 1 + b, b - h, 3 - b, b * h, 2 * b, -b, b // 2, 7 // b, b % 3, 7 % b,
               divmod(b, 2)[0], b.max(h), b.rmax(3), b.min(4), b.rmin(2), b**2]
    assert all(type(d) is Sub for d in derived), [type(d) for d in derived]


def test_python_integer_like_operands_are_accepted() -> None:
    class NumpyLikeInt:
        def __index__(self) -> int:
            return 3

    b = sym("b")
    assert b + NumpyLikeInt() == b + 3
    assert b * NumpyLikeInt() == 3 * b
    assert (b == NumpyLikeInt()) is False
    assert b + True == b + 1


def test_non_integer_operands_go_to_the_adapter_hook() -> None:
    b = sym("b")
    with pytest.raises(TypeError):
        b + 1.5
    with pytest.raises(TypeError):
        1.5 * b
    with pytest.raises(TypeError):
        b / 2
    with pytest.raises(TypeError):
        b >= 1.5

    class Hooked(DimExpr):
        __slots__ = ()

        def _nonsymbolic_operand(self, op: str, other: object, *, reflected: bool) -> Any:
            return (op, other, reflected)

    (c,) = parse_shape_spec("c", expr_class=Hooked)
    assert c + 1.5 == ("add", 1.5, False)
    assert 2.0 - c == ("sub", 2.0, True)
    assert c / 2 == ("truediv", 2, False)
    assert 3 / c == ("truediv", 3, True)
    assert (c >= 0.5) == ("ge", 0.5, False)
    assert 2 ** c == ("pow", 2, True)
    with pytest.raises(DimensionPowerError, match="cannot be raised to negative powers: 'c' \\*\\* '-1'"):
        c ** -1
    with pytest.raises(DimensionPowerError, match="cannot be raised to non-integer powers"):
        c ** 1.5
    assert c ** 2.0 == c * c


def test_int_of_a_dimension_raises_the_inconclusive_error() -> None:
    b = sym("b")
    with pytest.raises(InconclusiveDimensionError, match="Symbolic dimension 'b' used in a context that requires a constant"):
        int(b)
    with pytest.raises(InconclusiveDimensionError, match=r"'2\*b \+ 1' used in a context"):
        int(2 * b + 1)


def test_there_is_no_index_so_dimensions_are_not_constant_dims() -> None:
    b = sym("b")
    assert not hasattr(b, "__index__")
    with pytest.raises(TypeError):
        operator.index(b)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        [1, 2, 3][b]  # type: ignore[call-overload]


def test_get_vars_includes_variables_inside_operations() -> None:
    (e,) = dims("a*b + floordiv(c, d) + max(e, 3)")
    assert isinstance(e, DimExpr)
    assert e._get_vars() == {"a", "b", "c", "d", "e"}


def test_evaluate_uses_python_floor_semantics_by_default() -> None:
    (e,) = dims("floordiv(b - 7, 2) + mod(b - 7, 3) + max(b, 4)*h - min(b, h)")
    assert isinstance(e, DimExpr)
    for b in range(1, 9):
        for h in range(1, 4):
            expected = (b - 7) // 2 + (b - 7) % 3 + max(b, 4) * h - min(b, h)
            assert e._evaluate({"b": b, "h": h}) == expected


def test_evaluate_with_symbolic_values_gives_symbolic_results() -> None:
    (e,) = dims("2*b + max(b, 4)")
    c, d = syms("c, d")
    assert isinstance(e, DimExpr)
    assert str(e._evaluate({"b": c})) == "max(c, 4) + 2*c"
    assert e._evaluate({"b": 2 * d + 1}) == 4 * d + 2 + (2 * d + 1).max(4)
    assert str(e._evaluate({"b": 2 * d + 1})) == "max(2*d + 1, 4) + 4*d + 2"


class RecordingOps(PythonOps):
    """Records the max/min calls, as the JAX adapter (lax.max) or the IR emitter would."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any, Any]] = []

    def max(self, x: Any, y: Any) -> Any:
        self.calls.append(("max", x, y))
        return super().max(x, y)

    def min(self, x: Any, y: Any) -> Any:
        self.calls.append(("min", x, y))
        return super().min(x, y)


def test_evaluate_routes_operations_through_the_pluggable_ops() -> None:
    (e,) = dims("max(b, 4) + min(b, h)")
    assert isinstance(e, DimExpr)
    ops = RecordingOps()
    assert e._evaluate({"b": 2, "h": 7}, ops) == 6
    assert ops.calls == [("min", 2, 7), ("max", 2, 4)]


def test_default_ops_refuse_values_they_do_not_know() -> None:
    class ArrayLike:
        def max(self, axis: object = None) -> str:
            return "a reduction"

    with pytest.raises(TypeError, match="pass DimOps"):
        sym("max(b, 4)")._evaluate({"b": ArrayLike()})


def test_evaluate_with_a_missing_variable_is_a_typed_error() -> None:
    from jaxport.domain.symbolic import DimensionEvaluationError

    with pytest.raises(DimensionEvaluationError, match="'h'"):
        sym("b*h")._evaluate({"b": 2})


def test_division_by_zero_raises_zero_division_error() -> None:
    b = sym("b")
    with pytest.raises(ZeroDivisionError):
        b // 0
    with pytest.raises(ZeroDivisionError):
        b % 0


def test_copies_share_the_scope() -> None:
    b = sym("b")
    assert copy.copy(b) is b and copy.deepcopy(b) is b
    assert copy.deepcopy((b, 4))[0].scope is b.scope


def test_is_symbolic_dim() -> None:
    assert is_symbolic_dim(sym("b")) and not is_symbolic_dim(3)


def test_exact_polynomial_division() -> None:
    a, b = syms("a, b")
    assert (a * b + a) // (b + 1) == a
    assert (2 * b * b + b) // (2 * b + 1) == b
    assert (b * b - 1) // (b - 1) == b + 1
    assert (b * b * b) // (b * b) == b
    assert (a * b + a) % (b + 1) == 0
