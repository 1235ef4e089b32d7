"""Parsing shape specifications: the grammar, placeholders, and every error path."""

from __future__ import annotations

import pytest

from jaxport.domain.errors import JaxportError
from jaxport.domain.symbolic import (
    DimExpr,
    ShapeSpecSyntaxError,
    SymbolicScope,
    parse_constraint,
    parse_shape_spec,
)


def printed(spec: str, like: tuple[int | None, ...] | None = None) -> list[str]:
    return [str(d) for d in parse_shape_spec(spec, like=like)]


@pytest.mark.parametrize(("spec", "expected"), [
    ("", []), ("()", []), ("b,", ["b"]), ("(b,)", ["b"]), ("b, 4", ["b", "4"]),
    ("(b, 4)", ["b", "4"]), ("  b ,  4  ", ["b", "4"]), ("((b))", ["b"]), ("b\t,4", ["b", "4"]),
    ("b\n,4", ["b", "4"]), ("+b", ["b"]), ("_b, b_, b1, B", ["_b", "b_", "b1", "B"]),
    ("1_000", ["1000"]), ("b*h*2", ["2*b*h"]), ("2*b*3", ["6*b"]), ("-1 + b", ["b - 1"]),
    ("b + 1, floordiv(b, 2), mod(b, 3), max(b, 4), min(b, h)",
     ["b + 1", "floordiv(b, 2)", "mod(b, 3)", "max(b, 4)", "min(b, h)"]),
    ("b*h", ["b*h"]), ("-b^2", ["- b^2"]), ("2*b^2", ["2*b^2"]),
])
def test_valid_specs(spec: str, expected: list[str]) -> None:
    assert printed(spec) == expected


def test_parsed_dimensions_share_one_scope_and_variables() -> None:
    scope = SymbolicScope()
    b, b2, c = parse_shape_spec("b, b, c", scope=scope)
    assert isinstance(b, DimExpr) and isinstance(c, DimExpr)
    assert b == b2 and b.scope is scope and c.scope is scope


@pytest.mark.parametrize(("spec", "like", "expected"), [
    ("_, b", (3, None), ["3", "b"]), ("b, _", (None, 5), ["b", "5"]), ("...", (2, 3), ["2", "3"]),
    ("b, ...", (None, 3, 4), ["b", "3", "4"]), ("b, ...", (2,), ["b"]), ("b, c", (2, 3, 4), ["b", "c"]),
    ("b, 2*h, _, ...", (None, None, 7, 8, 9), ["b", "2*h", "7", "8", "9"]), ("(_, ...,)", (1, 2), ["1", "2"]),
])
def test_placeholders_take_dimensions_from_like(spec: str, like: tuple[int | None, ...],
                                                expected: list[str]) -> None:
    assert printed(spec, like) == expected


def _error(spec: str, dim: int, reason: str, parsed: str, remaining: str) -> str:
    return (f"syntax error in symbolic shape '{spec}' in dimension {dim}: {reason}. "
            f"Parsed '{parsed}', remaining '{remaining}'.")


OPERAND = "expecting one of {NAME, MINUS, NUMBER} but found"
AFTER_DIM = "expecting one of {COMMA, PLUS, MINUS, STAR} but found"


@pytest.mark.parametrize(("spec", "like", "message"), [
    ("(,)", None, _error("(,)", 0, f"{OPERAND} COMMA", "(", ",)")),
    (",", None, _error(",", 0, f"{OPERAND} COMMA", "", ",")),
    ("b,,4", None, _error("b,,4", 1, f"{OPERAND} COMMA", "b,", ",4")),
    ("b 4", None, _error("b 4", 0, f"{AFTER_DIM} NUMBER", "b ", "4")),
    ("b+", None, _error("b+", 0, f"{OPERAND} ENDMARKER", "b+", "")),
    ("b-", None, _error("b-", 0, f"{OPERAND} ENDMARKER", "b-", "")),
    ("*b", None, _error("*b", 0, f"{OPERAND} STAR", "", "*b")),
    ("2b", None, _error("2b", 0, "expecting integer, found 2b", "", "2b")),
    ("4.5", None, _error("4.5", 0, "expecting integer, found 4.5", "", "4.5")),
    ("1e3", None, _error("1e3", 0, "expecting integer, found 1e3", "", "1e3")),
    ("0x10", None, _error("0x10", 0, "expecting integer, found 0x10", "", "0x10")),
    ("b.c", None, _error("b.c", 0, f"{AFTER_DIM} DOT", "b", ".c")),
    ("b$", None, _error("b$", 0, f"{AFTER_DIM} ERRORTOKEN", "b", "$")),
    ("b**2", None, _error("b**2", 0, f"{AFTER_DIM} DOUBLESTAR", "b", "**2")),
    ("b // 2", None, _error("b // 2", 0, f"{AFTER_DIM} DOUBLESLASH", "b ", "// 2")),
    ("b % 2", None, _error("b % 2", 0, f"{AFTER_DIM} PERCENT", "b ", "% 2")),
    ("b / 2", None, _error("b / 2", 0, f"{AFTER_DIM} SLASH", "b ", "/ 2")),
    ("abs(b)", None, _error("abs(b)", 0, f"{AFTER_DIM} LPAR", "abs", "(b)")),
    ("2*(b)", None, _error("2*(b)", 0, f"{OPERAND} LPAR", "2*", "(b)")),
    ("(b, (4))", None, _error("(b, (4))", 1, f"{OPERAND} LPAR", "(b, ", "(4))")),
    ("floordiv(b)", None, _error("floordiv(b)", 0, "expecting one of {COMMA} but found RPAR", "floordiv(b", ")")),
    ("floordiv(b,2,3)", None,
     _error("floordiv(b,2,3)", 0, "expecting one of {RPAR} but found COMMA", "floordiv(b,2", ",3)")),
    ("floordiv b", None, _error("floordiv b", 0, "expecting one of {LPAR} but found NAME", "floordiv ", "b")),
    ("max(b)", None, _error("max(b)", 0, "expecting one of {COMMA} but found RPAR", "max(b", ")")),
    ("mod(b, 0)", None, _error("mod(b, 0)", 0, "division by zero in mod", "mod(b, 0", ")")),
    ("b^h", None, _error("b^h", 0, "expecting one of {NUMBER} but found NAME", "b^", "h")),
    ("b^-1", None, _error("b^-1", 0, "expecting one of {NUMBER} but found MINUS", "b^", "-1")),
    ("(b", None, _error("(b", 0, "expecting one of {RPAR} but found ENDMARKER", "(b", "")),
    ("b)", None, _error("b)", 1, "expecting one of {ENDMARKER} but found RPAR", "b", ")")),
    ("floordiv(_, 2)", None,
     _error("floordiv(_, 2)", 0, "the placeholder '_' must be a whole dimension", "floordiv(", "_, 2)")),
    ("_", None, _error("_", 0, "spec contains _ but no 'like' shape was given", "", "_")),
    ("b, _", None, _error("b, _", 1, "spec contains _ but no 'like' shape was given", "b, ", "_")),
    ("...", None, _error("...", 0, "spec contains ... but no 'like' shape was given", "", "...")),
    ("b, ...", None, _error("b, ...", 1, "spec contains ... but no 'like' shape was given", "b, ", "...")),
    ("..., b", (1, 2), _error("..., b", 0, "'...' must be the last dimension of the shape", "..., ", "b")),
    ("_, _", (2,), _error("_, _", 1, "cannot resolve placeholder '_' because we parsed 1 already "
                                     "and 'like' shape has only 1 dimensions", "_, ", "_")),
    ("b, c, ...", (2,), _error("b, c, ...", 2, "cannot resolve placeholder '...' because we parsed 2 "
                                               "already and 'like' shape has only 1 dimensions", "b, c, ", "...")),
    ("_", (None,), _error("_", 0, "unexpected placeholder for unknown dimension; like=(None,)", "", "_")),
    ("b, ...", (1, None), _error("b, ...", 1, "unexpected placeholder for unknown dimension; like=(1, None)",
                                 "b, ", "...")),
])
def test_malformed_specs_report_the_spec_and_the_position(
    spec: str, like: tuple[int | None, ...] | None, message: str
) -> None:
    with pytest.raises(ShapeSpecSyntaxError) as info:
        parse_shape_spec(spec, like=like)
    assert str(info.value) == message
    assert isinstance(info.value, ValueError) and isinstance(info.value, JaxportError)
    assert info.value.spec == spec


def test_the_error_records_dimension_and_position() -> None:
    with pytest.raises(ShapeSpecSyntaxError) as info:
        parse_shape_spec("b, 2*h, 3 3")
    assert (info.value.dimension, info.value.position) == (2, 10)


@pytest.mark.parametrize(("text", "relation"), [("b >= 16", ">="), ("b<=1024", "<="), ("h == 2*w", "==")])
def test_constraints_parse_into_sides_and_relation(text: str, relation: str) -> None:
    left, rel, right = parse_constraint(text, scope=SymbolicScope())
    assert rel == relation
    assert f"{left} {rel} {right}".replace(" ", "") == text.replace(" ", "")
