"""The command line's array specs: ``f32[b,784]`` and friends, in one scope with the constraints."""

from __future__ import annotations

import pytest

from jaxport.domain.arg_specs import parse_arg_spec, parse_kwarg_spec
from jaxport.domain.errors import ArgSpecError
from jaxport.domain.specs import ArraySpec
from jaxport.domain.symbolic import SymbolicScope, is_symbolic_dim


@pytest.mark.parametrize(("text", "expected"), [
    ("f32[b,784]", "float32[b,784]"), ("bf16[8,b]", "bfloat16[8,b]"), ("i32[]", "int32[]"),
    ("bool[3]", "bool[3]"), ("float32[2, 3]", "float32[2,3]"), (" u8[ 1 ] ", "uint8[1]"),
    ("f64[2*b + 1, max(b, 4)]", "float64[2*b + 1,max(b, 4)]"), ("c64[b,]", "complex64[b]"),
    ("float8_e4m3fn[4]", "float8_e4m3fn[4]"),
])
def test_a_spec_reads_as_dtype_and_dimensions(text: str, expected: str) -> None:
    assert str(parse_arg_spec(text, scope=SymbolicScope())) == expected


def test_constant_dimensions_are_ints_and_names_are_symbolic() -> None:
    spec = parse_arg_spec("f32[b, 784]", scope=SymbolicScope())
    assert spec == ArraySpec(shape=spec.shape, dtype="float32")
    assert is_symbolic_dim(spec.shape[0]) and spec.shape[1] == 784 and type(spec.shape[1]) is int


def test_the_specs_and_the_constraints_share_one_scope() -> None:
    scope = SymbolicScope(("b >= 16",))
    x = parse_arg_spec("f32[b, 3]", scope=scope)
    y = parse_arg_spec("f32[2*b]", scope=scope)
    b = x.shape[0]
    assert y.shape[0] == 2 * b
    assert b >= 16  # decided by the constraint of the shared scope


def test_a_keyword_spec_is_name_equals_spec() -> None:
    assert parse_kwarg_spec("scale=f32[]", scope=SymbolicScope()) == ("scale", ArraySpec((), "float32"))
    assert parse_kwarg_spec(" mask = bool[3]", scope=SymbolicScope())[0] == "mask"


@pytest.mark.parametrize(("text", "message"), [
    ("f32", "is not DTYPE\\[DIMS\\]"), ("f32[3", "is not DTYPE\\[DIMS\\]"), ("[3]", "is not DTYPE"),
    ("f32[3]x", "is not DTYPE"), ("f33[3]", "unknown dtype 'f33'"), ("float[3]", "unknown dtype 'float'"),
    ("f32[b+]", "array spec 'f32\\[b\\+\\]': syntax error"), ("f32[_]", "no 'like' shape"),
    ("f32[...]", "no 'like' shape"), ("f32[-1]", "dimension -1 is negative"),
    ("f32[[3]]", "is not DTYPE"),
])
def test_a_bad_spec_is_an_arg_spec_error_that_quotes_it(text: str, message: str) -> None:
    with pytest.raises(ArgSpecError, match=message):
        parse_arg_spec(text, scope=SymbolicScope())


@pytest.mark.parametrize("text", ["f32[3]", "=f32[3]", "1x=f32[3]", "a b=f32[3]"])
def test_a_bad_keyword_spec_is_an_arg_spec_error(text: str) -> None:
    with pytest.raises(ArgSpecError, match="is not NAME=DTYPE"):
        parse_kwarg_spec(text, scope=SymbolicScope())


def test_arg_spec_error_is_a_value_error_and_a_jaxport_error() -> None:
    from jaxport.errors import JaxportError

    assert issubclass(ArgSpecError, ValueError) and issubclass(ArgSpecError, JaxportError)
