"""End to end: calls that do not match the export raise typed, precise errors.

Every bad call is made eagerly and under ``jax.jit``; the message must name the
argument path and both the exported and the actual value, in JAX's words.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport
from jaxport.errors import (
    CallError,
    DtypeMismatchError,
    JaxportError,
    RankMismatchError,
    ShapeMismatchError,
    TreeMismatchError,
)


def f(x: Any, pair: tuple[dict[str, Any], Any], *, y: Any) -> Any:
    return x + pair[0]["a"] + pair[1] + y


X = np.ones((3, 4), np.float32)
V = np.arange(4, dtype=np.float32)
Y = np.float32(2.0)


@functools.cache
def exported(exporter: str = "jaxport") -> Any:
    """``f`` exported by jaxport or by ``jax.export``, for the same specs."""
    export = jaxport.export if exporter == "jaxport" else jax.export.export
    return export(jax.jit(f))(
        jax.ShapeDtypeStruct((3, 4), jnp.float32),
        ({"a": jax.ShapeDtypeStruct((3, 4), jnp.float32)}, jax.ShapeDtypeStruct((4,), jnp.float32)),
        y=jax.ShapeDtypeStruct((), jnp.float32))


@dataclass(frozen=True)
class BadCall:
    """A call that must fail, the error it raises and a regex of its message."""

    name: str
    call: Callable[[Callable[..., Any]], Any]
    error: type[CallError]
    message: str


TREE_PREFIX = (r"The invocation args and kwargs must have the same pytree structure as when "
               r"the function 'f' was exported, but they have the following structural differences:\n")

BAD_CALLS = [
    BadCall("a list where a tuple was exported",
            lambda c: c(X, [{"a": X}, V], y=Y), TreeMismatchError,
            TREE_PREFIX + r"   - args\[1\] is a <class 'list'> in the invocation and a "
            r"<class 'tuple'> when exported, so their Python types differ"),
    BadCall("a dict without the exported key",
            lambda c: c(X, ({"b": X}, V), y=Y), TreeMismatchError,
            r"args\[1\]\[0\] is a <class 'dict'> with pytree metadata \('b',\) in the invocation "
            r"and a <class 'dict'> with pytree metadata \('a',\) when exported"),
    BadCall("an extra keyword argument",
            lambda c: c(X, ({"a": X}, V), y=Y, z=Y), TreeMismatchError,
            r"kwargs is a <class 'dict'> with 2 children in the invocation and a <class 'dict'> "
            r"with 1 child when exported.*symmetric difference of key sets: \{'z'\}"),
    BadCall("a missing keyword argument",
            lambda c: c(X, ({"a": X}, V)), TreeMismatchError,
            r"kwargs is a <class 'dict'> with 0 child in the invocation and a <class 'dict'> "
            r"with 1 child when exported.*\{'y'\}"),
    BadCall("too many positional arguments",
            lambda c: c(X, ({"a": X}, V), X, y=Y), TreeMismatchError,
            r"args is a tuple of length 3 in the invocation and a tuple of length 2 when "
            r"exported, so the lengths do not match"),
    BadCall("too few positional arguments",
            lambda c: c(X, y=Y), TreeMismatchError,
            r"args is a tuple of length 1 in the invocation and a tuple of length 2 when "
            r"exported, so the lengths do not match"),
    BadCall("a nested argument of the wrong rank",
            lambda c: c(X, ({"a": X}, V.reshape(4, 1)), y=Y), RankMismatchError,
            r"^Rank mismatch for args\[1\]\[1\]: expected \(4,\) and called with \(4, 1\)(\n|$)"),
    BadCall("a scalar keyword argument of the wrong rank",
            lambda c: c(X, ({"a": X}, V), y=np.ones((1,), np.float32)), RankMismatchError,
            r"^Rank mismatch for kwargs\['y'\]: expected \(\) and called with \(1,\)(\n|$)"),
    BadCall("a dict entry of the wrong dtype",
            lambda c: c(X, ({"a": X.astype(np.int32)}, V), y=Y), DtypeMismatchError,
            r"^Dtype mismatch for args\[1\]\[0\]\['a'\]: expected float32 and called with int32(\n|$)"),
    BadCall("a keyword argument of the wrong dtype",
            lambda c: c(X, ({"a": X}, V), y=np.float16(2.0)), DtypeMismatchError,
            r"^Dtype mismatch for kwargs\['y'\]: expected float32 and called with float16(\n|$)"),
    BadCall("a wrong constant dimension",
            lambda c: c(np.ones((3, 5), np.float32), ({"a": X}, V), y=Y), ShapeMismatchError,
            r"^Shape mismatch for args\[0\]\.shape\[1\] \(expected same constant\): "
            r"expected \(3, 4\) and called with \(3, 5\)(\n|$)"),
    BadCall("a wrong constant dimension in a dict entry",
            lambda c: c(X, ({"a": np.ones((2, 4), np.float32)}, V), y=Y), ShapeMismatchError,
            r"^Shape mismatch for args\[1\]\[0\]\['a'\]\.shape\[0\] \(expected same constant\): "
            r"expected \(3, 4\) and called with \(2, 4\)(\n|$)"),
]
BAD_CALL_IDS = [bad.name.replace(" ", "_") for bad in BAD_CALLS]


@pytest.mark.parametrize("bad", BAD_CALLS, ids=BAD_CALL_IDS)
def test_a_bad_eager_call_raises_a_typed_error_naming_the_argument(bad: BadCall) -> None:
    with pytest.raises(bad.error, match=bad.message):
        bad.call(exported().call)


@pytest.mark.parametrize("bad", BAD_CALLS, ids=BAD_CALL_IDS)
def test_a_bad_call_under_jit_raises_a_typed_error_naming_the_argument(bad: BadCall) -> None:
    with pytest.raises(bad.error, match=bad.message):
        bad.call(jax.jit(exported().call))


@pytest.mark.parametrize("bad", BAD_CALLS, ids=BAD_CALL_IDS)
def test_a_bad_call_has_the_message_of_jax_export(bad: BadCall) -> None:
    with pytest.raises(ValueError) as ours:
        bad.call(exported().call)
    with pytest.raises(ValueError) as theirs:
        bad.call(exported("jax").call)
    assert str(ours.value) == str(theirs.value)


def test_call_errors_are_value_errors_and_jaxport_errors() -> None:
    for error in (TreeMismatchError, RankMismatchError, DtypeMismatchError, ShapeMismatchError):
        assert issubclass(error, ValueError)
        assert issubclass(error, JaxportError)


def test_the_tree_error_lists_every_difference_by_path() -> None:
    with pytest.raises(TreeMismatchError) as info:
        exported().call(X, ({"b": X}, [V]), z=Y)
    assert [d.path for d in info.value.differences] == ["args[1][0]", "args[1][1]", "kwargs"]
    message = str(info.value)
    assert "args[1][0] is a <class 'dict'> with pytree metadata ('b',)" in message
    assert "args[1][1] is a <class 'list'> in the invocation" in message
    assert "kwargs is a <class 'dict'> with pytree metadata ('z',)" in message


def test_a_good_call_after_bad_ones_still_runs() -> None:
    for bad in BAD_CALLS:
        with pytest.raises(bad.error):
            bad.call(exported().call)
    result = exported().call(X, ({"a": X}, V), y=Y)
    np.testing.assert_allclose(result, X + X + V + Y)
