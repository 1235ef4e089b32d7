"""The shape plan and the call-side solve; messages are verbatim from jax.export 0.10.2."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from jaxport.domain.errors import RankMismatchError, ShapeMismatchError
from jaxport.domain.jax_docs import pages_for
from jaxport.domain.symbolic import (
    ArgDim,
    Comparison,
    DimExpr,
    DimSize,
    InconclusiveDimensionError,
    PythonOps,
    Remainder,
    ShapeAssertion,
    ShapeAssertionError,
    SymbolicScope,
    UnsolvableDimensionError,
    VarDerivation,
    build_plan,
    call_output_shapes,
    parse_shape_spec,
    run_plan,
    solve_call,
)

DOC = "https://docs.jax.dev/en/latest/501/shape-polymorphism.html"
SEE = f" Please see {DOC}#shape-assertion-errors for more details."
MISMATCH = "Input shapes do not match the polymorphic shapes specification. "

Shapes = tuple[tuple[DimSize, ...], ...]


def exported(*specs: str, constraints: Sequence[str] = ()) -> tuple[Shapes, tuple[str, ...]]:
    scope = SymbolicScope(constraints)
    shapes = tuple(parse_shape_spec(s, scope=scope) for s in specs)
    return shapes, tuple(f"args[{i}]" for i in range(len(specs)))


def call_error(specs: Sequence[str], actual: Sequence[tuple[int, ...]], constraints: Sequence[str] = ()) -> str:
    shapes, paths = exported(*specs, constraints=constraints)
    with pytest.raises(ShapeAssertionError) as info:
        solve_call(shapes, actual, paths)
    assert isinstance(info.value, ValueError)
    return str(info.value)


# ---- the plan (export side) ------------------------------------------------------


def test_a_linear_dimension_is_solved_by_a_division_with_remainder_check() -> None:
    shapes, paths = exported("2*b + 1", "h", constraints=["b >= h", "h <= 100"])
    plan = build_plan(shapes, paths)
    derive_b, remainder, b_positive, derive_h, h_positive, b_ge_h, h_le_100 = plan.steps
    assert isinstance(derive_b, VarDerivation) and isinstance(derive_h, VarDerivation)
    assert (derive_b.var, derive_b.source, derive_b.coefficient, derive_b.offset) == ("b", ArgDim(0, 0), 2, 1)
    assert (derive_b.spec, derive_b.where, derive_b.is_direct) == ("2*b + 1", "args[0].shape[0]", False)
    assert derive_h.is_direct and derive_h.source == ArgDim(1, 0)
    assert isinstance(remainder, ShapeAssertion)
    assert (remainder.lhs, remainder.comparison, remainder.rhs) == (Remainder("b"), Comparison.EQ, 0)
    assert isinstance(b_positive, ShapeAssertion) and isinstance(h_positive, ShapeAssertion)
    assert (str(b_positive.lhs), b_positive.comparison, b_positive.rhs) == ("b", Comparison.GE, 1)
    assert b_positive.message_values[1] == ArgDim(0, 0)
    assert (h_positive.lhs, h_positive.rhs) == (ArgDim(1, 0), 1)
    assert isinstance(b_ge_h, ShapeAssertion) and isinstance(h_le_100, ShapeAssertion)
    assert (str(b_ge_h.lhs), str(h_le_100.lhs)) == ("- h + b", "- h + 100")
    assert plan.dim_vars == ("b", "h")
    assert plan.derivations == (derive_b, derive_h) and plan.derivation("h") is derive_h
    specs = "Using the following polymorphic shapes specifications: args[0].shape = (2*b + 1,),args[1].shape = (h,)."
    listing = ("Obtained dimension variables: 'b' = {1} from specification '2*b + 1' for dimension "
               "args[0].shape[0] (= {2}), 'h' = {3} from specification 'h' for dimension args[1].shape[0] (= {3}), .")
    assert [a.message for a in plan.assertions] == [
        f"{MISMATCH}Division had remainder {{0}} when computing the value of 'b'. {specs} "
        f"Obtained dimension variables: .{SEE}",
        f"{MISMATCH}Expected value >= 1 for dimension variable 'b'. {specs} Obtained dimension variables: "
        "'b' = {0} from specification '2*b + 1' for dimension args[0].shape[0] (= {1}), ." + SEE,
        f"{MISMATCH}Expected value >= 1 for dimension variable 'h'. {specs} Obtained dimension variables: "
        "'b' = {0} from specification '2*b + 1' for dimension args[0].shape[0] (= {1}), 'h' = {2} from "
        "specification 'h' for dimension args[1].shape[0] (= {2}), ." + SEE,
        "Input shapes do not match the symbolic shape constraint b >= h. Expected '- h + b' to be greater or "
        f"equal to 0, but found {{0}}.  {specs} {listing}{SEE}",
        "Input shapes do not match the symbolic shape constraint h <= 100. Expected '- h + 100' to be greater or "
        f"equal to 0, but found {{0}}.  {specs} {listing}{SEE}",
    ]


def test_a_repeated_variable_becomes_a_consistency_check() -> None:
    plan = build_plan(*exported("b, b, 2*d"))
    specs = "Using the following polymorphic shapes specifications: args[0].shape = (b, b, 2*d)."
    b_listing = "'b' = {1} from specification 'b' for dimension args[0].shape[0] (= {1}), "
    assert [a.message for a in plan.assertions] == [
        f"{MISMATCH}Expected value >= 1 for dimension variable 'b'. {specs} Obtained dimension variables: "
        "'b' = {0} from specification 'b' for dimension args[0].shape[0] (= {0}), ." + SEE,
        f"{MISMATCH}Found inconsistency between dimension size args[0].shape[1] (= {{0}}) and the specification "
        f"'b' (= {{1}}). {specs} Obtained dimension variables: {b_listing}.{SEE}",
        f"{MISMATCH}Division had remainder {{0}} when computing the value of 'd'. {specs} "
        f"Obtained dimension variables: {b_listing}.{SEE}",
        f"{MISMATCH}Expected value >= 1 for dimension variable 'd'. {specs} Obtained dimension variables: "
        "'b' = {0} from specification 'b' for dimension args[0].shape[0] (= {0}), 'd' = {1} from specification "
        "'2*d' for dimension args[0].shape[2] (= {2}), ." + SEE,
    ]
    consistency = plan.assertions[1]
    assert (consistency.lhs, consistency.rhs) == (ArgDim(0, 1), ArgDim(0, 0))


def test_a_variable_eliminated_by_an_equality_is_not_checked_again() -> None:
    plan = build_plan(*exported("h, w", constraints=["h == 2*w"]))
    assert "args[0].shape = (2*w, w)" in plan.assertions[0].message
    assert [a.message.split(".")[0] for a in plan.assertions] == [
        "Input shapes do not match the polymorphic shapes specification"] * 3
    plan = build_plan(*exported("a, b, c", constraints=["floordiv(a, b) == c"]))
    assert "the symbolic shape constraint floordiv(a, b) == c. Expected 'floordiv(a, b) - c' to be equal to 0" \
        in plan.assertions[-1].message


def test_arguments_with_constant_shapes_are_not_listed() -> None:
    plan = build_plan(*exported("b", "3, 4"))
    assert "specifications: args[0].shape = (b,). Obtained" in plan.assertions[0].message


def test_a_plan_without_symbolic_dimensions_is_empty() -> None:
    plan = build_plan(((3, 4), (5,)), ("args[0]", "args[1]"))
    assert plan.steps == () and plan.dim_vars == ()


@pytest.mark.parametrize(("specs", "message"), [
    (["b*b"], "Cannot solve for values of dimension variables {'b'}. We can only solve linear uni-variate "
              "constraints. Using the following polymorphic shapes specifications: args[0].shape = (b^2,). "
              "Unprocessed specifications: 'b^2' for dimension size args[0].shape[0]. Please see "
              f"{DOC}#dimension-variables-must-be-solvable-from-the-input-shapes for more details."),
    (["b*h", "h"], "Cannot solve for values of dimension variables {'b'}. We can only solve linear uni-variate "
                   "constraints. Using the following polymorphic shapes specifications: args[0].shape = (b*h,),"
                   "args[1].shape = (h,). Unprocessed specifications: 'b*h' for dimension size args[0].shape[0]. "
                   f"Please see {DOC}#dimension-variables-must-be-solvable-from-the-input-shapes for more details."),
    (["floordiv(b, 2)", "max(h, 2)"], "{'b', 'h'}"),
])
def test_unsolvable_variables_are_named(specs: list[str], message: str) -> None:
    with pytest.raises(UnsolvableDimensionError) as info:
        build_plan(*exported(*specs))
    assert message in str(info.value)
    assert isinstance(info.value, ValueError)


# ---- the call side ---------------------------------------------------------------


def test_dimension_variable_must_be_positive() -> None:
    assert call_error(["b, 4"], [(0, 4)]) == (
        f"{MISMATCH}Expected value >= 1 for dimension variable 'b'. Using the following polymorphic shapes "
        "specifications: args[0].shape = (b, 4). Obtained dimension variables: 'b' = 0 from specification 'b' "
        f"for dimension args[0].shape[0] (= 0), .{SEE}")
    assert call_error(["b + 15"], [(10,)]) == (
        f"{MISMATCH}Expected value >= 1 for dimension variable 'b'. Using the following polymorphic shapes "
        "specifications: args[0].shape = (b + 15,). Obtained dimension variables: 'b' = -5 from specification "
        f"'b + 15' for dimension args[0].shape[0] (= 10), .{SEE}")


def test_division_must_be_exact() -> None:
    assert call_error(["2*d"], [(5,)]) == (
        f"{MISMATCH}Division had remainder 1 when computing the value of 'd'. Using the following polymorphic "
        f"shapes specifications: args[0].shape = (2*d,). Obtained dimension variables: .{SEE}")
    assert call_error(["b, b, 2*d"], [(3, 3, 5)]) == (
        f"{MISMATCH}Division had remainder 1 when computing the value of 'd'. Using the following polymorphic "
        "shapes specifications: args[0].shape = (b, b, 2*d). Obtained dimension variables: 'b' = 3 from "
        f"specification 'b' for dimension args[0].shape[0] (= 3), .{SEE}")


def test_dimensions_must_be_consistent() -> None:
    assert call_error(["b, b"], [(3, 4)]) == (
        f"{MISMATCH}Found inconsistency between dimension size args[0].shape[1] (= 4) and the specification "
        "'b' (= 3). Using the following polymorphic shapes specifications: args[0].shape = (b, b). Obtained "
        f"dimension variables: 'b' = 3 from specification 'b' for dimension args[0].shape[0] (= 3), .{SEE}")
    assert call_error(["b", "max(b, 4)"], [(3,), (3,)]).startswith(
        f"{MISMATCH}Found inconsistency between dimension size args[1].shape[0] (= 3) and the specification "
        "'max(b, 4)' (= 4).")


@pytest.mark.parametrize(("constraint", "actual", "expected", "found"), [
    ("b >= 16", 3, "'b - 16' to be greater or equal to 0", "-13"),
    ("b <= 10", 30, "'- b + 10' to be greater or equal to 0", "-20"),
])
def test_user_inequalities_are_checked(constraint: str, actual: int, expected: str, found: str) -> None:
    assert call_error(["b"], [(actual,)], [constraint]) == (
        f"Input shapes do not match the symbolic shape constraint {constraint}. Expected {expected}, but found "
        f"{found}.  Using the following polymorphic shapes specifications: args[0].shape = (b,). Obtained "
        f"dimension variables: 'b' = {actual} from specification 'b' for dimension args[0].shape[0] "
        f"(= {actual}), .{SEE}")


def test_user_equalities_are_checked() -> None:
    assert call_error(["a", "b", "c"], [(8,), (4,), (3,)], ["floordiv(a, b) == c"]) == (
        "Input shapes do not match the symbolic shape constraint floordiv(a, b) == c. Expected 'floordiv(a, b) "
        "- c' to be equal to 0, but found -1.  Using the following polymorphic shapes specifications: "
        "args[0].shape = (a,),args[1].shape = (b,),args[2].shape = (c,). Obtained dimension variables: 'a' = 8 "
        "from specification 'a' for dimension args[0].shape[0] (= 8), 'b' = 4 from specification 'b' for "
        "dimension args[1].shape[0] (= 4), 'c' = 3 from specification 'c' for dimension args[2].shape[0] "
        f"(= 3), .{SEE}")
    assert "Division had remainder 1 when computing the value of 'b'" in call_error(
        ["a", "b"], [(3,), (4,)], ["a == 2*b"])


def test_variables_are_solved_in_jax_order() -> None:
    assert call_error(["b + h", "h"], [(3,), (5,)]) == (
        f"{MISMATCH}Expected value >= 1 for dimension variable 'b'. Using the following polymorphic shapes "
        "specifications: args[0].shape = (h + b,),args[1].shape = (h,). Obtained dimension variables: 'h' = 5 "
        "from specification 'h' for dimension args[1].shape[0] (= 5), 'b' = -2 from specification 'h + b' for "
        f"dimension args[0].shape[0] (= 3), .{SEE}")


def test_a_valid_call_gives_the_variables_and_the_output_shapes() -> None:
    shapes, paths = exported("2*b + 1, 4", "h, b", constraints=["h >= b"])
    solution = solve_call(shapes, [(7, 4), (5, 3)], paths)
    assert dict(solution.values) == {"b": 3, "h": 5}
    scope = shapes[0][0].scope  # type: ignore[union-attr]
    outs = (parse_shape_spec("floordiv(b, 2), max(b, 4) + h, 2*b*h, 3", scope=scope),)
    assert call_output_shapes(shapes, outs, [(7, 4), (5, 3)], paths) == ((1, 9, 30, 3),)


def test_the_call_side_solve_is_cached() -> None:
    shapes, paths = exported("b, 2*h")
    first = solve_call(shapes, [(3, 8)], paths)
    assert solve_call(shapes, [(3, 8)], paths) is first
    assert solve_call(shapes, [(3, 10)], paths) is not first


def test_rank_and_constant_dimensions_are_checked() -> None:
    shapes, paths = exported("b, 4")
    with pytest.raises(RankMismatchError, match=r"Rank mismatch for args\[0\]: expected \(b, 4\) and called with \(3,\)"):
        solve_call(shapes, [(3,)], paths)
    with pytest.raises(ShapeMismatchError, match=r"args\[0\].shape\[1\] \(expected same constant\): "
                                                  r"expected \(b, 4\) and called with \(3, 5\)"):
        solve_call(shapes, [(3, 5)], paths)


# ---- calling with the caller's symbolic shapes -------------------------------------


def symbolic_call(specs: Sequence[str], actual: Sequence[str], constraints: Sequence[str] = (),
                  caller_constraints: Sequence[str] = ()) -> str:
    shapes, paths = exported(*specs, constraints=constraints)
    caller = SymbolicScope(caller_constraints)
    actual_shapes = [parse_shape_spec(s, scope=caller) for s in actual]
    try:
        solution = solve_call(shapes, actual_shapes, paths)
    except ShapeAssertionError as e:
        return str(e)
    return "OK " + ", ".join(f"{k}={v}" for k, v in solution.values.items())


@pytest.mark.parametrize(("specs", "actual", "constraints", "caller", "result"), [
    (["2*b"], ["2*c"], [], [], "OK b=c"),
    (["2*b"], ["4*c"], [], [], "OK b=2*c"),
    (["2*b + 1"], ["2*c+3"], [], [], "OK b=c + 1"),
    (["b + 15"], ["c + 16"], [], [], "OK b=c + 1"),
    (["b"], ["c + 16"], ["b >= 16"], [], "OK b=c + 16"),
    (["b"], ["c"], ["b >= 16"], ["c >= 20"], "OK b=c"),
    (["b", "b"], ["c", "c"], [], [], "OK b=c"),
    (["b", "max(b, 4)"], ["c", "max(c, 4)"], [], [], "OK b=c"),
    (["b", "h"], ["c", "5"], [], [], "OK b=c, h=5"),
    (["2*b"], ["c"], [], [], "Division had remainder mod(c, 2) when computing the value of 'b'."),
    (["b + 15"], ["c"], [], [], "Obtained dimension variables: 'b' = c - 15 from specification 'b + 15' for "
                                "dimension args[0].shape[0] (= c), ."),
    (["b"], ["c"], ["b >= 16"], [], "Expected 'b - 16' to be greater or equal to 0, but found c - 16.  "),
    (["b"], ["c"], ["b >= 16"], ["c <= 10"], "but found c - 16."),
    (["b", "b"], ["c", "d"], [], [], "Found inconsistency between dimension size args[1].shape[0] (= d) and "
                                     "the specification 'b' (= c)."),
    (["b", "max(b, 4)"], ["c", "c"], [], [], "and the specification 'max(b, 4)' (= max(c, 4))."),
    (["b"], ["c - 1"], [], [], "Expected value >= 1 for dimension variable 'b'."),
])
def test_calls_with_symbolic_shapes(specs: list[str], actual: list[str], constraints: list[str],
                                    caller: list[str], result: str) -> None:
    assert result in symbolic_call(specs, actual, constraints, caller)


def test_output_shapes_of_a_symbolic_call_are_in_the_caller_scope() -> None:
    shapes, paths = exported("2*b")
    scope = shapes[0][0].scope  # type: ignore[union-attr]
    (c,) = parse_shape_spec("c")
    assert isinstance(c, DimExpr)
    outs = (parse_shape_spec("b, max(b, 4), floordiv(b, 2)", scope=scope),)
    (out,) = call_output_shapes(shapes, outs, [(2 * c,)], paths)
    assert [str(d) for d in out] == ["c", "max(c, 4)", "floordiv(c, 2)"]
    assert all(d.scope is c.scope for d in out if isinstance(d, DimExpr))


# ---- the generic interpreter (what the IR adapter does) ------------------------------


class TextOps(PythonOps):
    """Builds expression text, as an IR emitter builds ops."""

    def constant(self, value: int) -> Any:
        return str(value)

    def add(self, x: Any, y: Any) -> Any:
        return f"add({x}, {y})"

    def mul(self, x: Any, y: Any) -> Any:
        return f"mul({x}, {y})"

    def floordiv(self, x: Any, y: Any) -> Any:
        return f"div({x}, {y})"

    def mod(self, x: Any, y: Any) -> Any:
        return f"rem({x}, {y})"


class Recorder:
    def __init__(self) -> None:
        self.checks: list[tuple[str, str, str, list[Any]]] = []

    def arg_dim(self, source: ArgDim) -> Any:
        return f"d{source.arg}{source.dim}"

    def check(self, assertion: ShapeAssertion, lhs: Any, rhs: Any, values: Callable[[], list[Any]]) -> None:
        self.checks.append((lhs, assertion.comparison.value, rhs, values()))


def test_run_plan_emits_the_computation_through_the_ops() -> None:
    shapes, paths = exported("2*b + 1", "h + b")
    recorder = Recorder()
    env = run_plan(build_plan(shapes, paths), recorder, TextOps())
    assert env == {"b": "div(add(d00, mul(1, -1)), 2)", "h": "add(d10, mul(div(add(d00, mul(1, -1)), 2), -1))"}
    assert recorder.checks[0] == ("rem(add(d00, mul(1, -1)), 2)", "==", "0", ["rem(add(d00, mul(1, -1)), 2)"])
    assert recorder.checks[1][:3] == (env["b"], ">=", "1")
    assert recorder.checks[2][:3] == (env["h"], ">=", "1")


class _DimOfJax010(DimExpr):
    """Dimensions whose messages cite the pages where JAX 0.10 has them (as the JAX adapter's would there)."""

    __slots__ = ()
    docs = pages_for((0, 10))


def test_messages_cite_the_pages_that_the_dimensions_class_names() -> None:
    older = pages_for((0, 10)).shape_poly
    scope = SymbolicScope()
    (b,) = parse_shape_spec("b", scope=scope, expr_class=_DimOfJax010)
    plan = build_plan(((b,),), ("args[0]",))
    with pytest.raises(ShapeAssertionError, match=f"Please see {older}#shape-assertion-errors"):
        solve_call(((b,),), ((0,),), ("args[0]",))
    assert all(older in step.message for step in plan.steps if isinstance(step, ShapeAssertion))
    with pytest.raises(InconclusiveDimensionError, match=f"Please see {older}#comparison"):
        bool(b >= 2)
    (h,) = parse_shape_spec("h")  # the domain's own: the pages where docs.jax.dev has them now
    with pytest.raises(InconclusiveDimensionError, match=f"Please see {DOC}#comparison"):
        int(h)
