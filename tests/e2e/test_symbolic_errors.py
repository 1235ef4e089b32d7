"""End to end: every error of shape polymorphism, with its message.

At export: inconclusive comparisons, unsolvable dimension variables, malformed
specs and constraints, mixed scopes. At call time: each kind of violated
constraint, eagerly and under ``jax.jit``. Where ``jax.export`` reports the same
case, the message must be the one it prints, word for word.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.extend import core as jex_core

import jaxport
from jaxport.adapters.jax.lowering.dims import JAX_DOCS
from jaxport.domain.symbolic import (
    ConstraintError,
    InconclusiveDimensionError,
    ScopeMixingError,
    ShapeAssertionError,
    ShapeSpecSyntaxError,
    UnsolvableDimensionError,
)
from jaxport.errors import JaxportError, RankMismatchError, ShapeMismatchError

F32 = jnp.float32


def spec(lib: Any, shape_spec: str, constraints: tuple[str, ...] = ()) -> jax.ShapeDtypeStruct:
    """A float32 ``ShapeDtypeStruct`` with symbolic dimensions of ``lib`` (jaxport or jax.export)."""
    return jax.ShapeDtypeStruct(lib.symbolic_shape(shape_spec, constraints=constraints), F32)


def export_with(lib: Any) -> Callable[..., Any]:
    return jaxport.export if lib is jaxport else jax.export.export


def message_of(action: Callable[[], Any]) -> str:
    """The message of the exception that ``action`` raises."""
    with pytest.raises(Exception) as info:
        action()
    return str(info.value)


def zeros(*shape: int) -> np.ndarray:
    return np.zeros(shape, np.float32)


# --------------------------------------------------------------------------
# At export: inconclusive comparisons
# --------------------------------------------------------------------------


def at_least_four_rows(x: Any) -> Any:
    return x[:4] if x.shape[0] >= 4 else x * 2.0


INCONCLUSIVE = r"Symbolic dimension comparison 'b' >= '4' is inconclusive\."


def test_an_inconclusive_comparison_names_the_comparison_and_suggests_a_constraint() -> None:
    with pytest.raises(InconclusiveDimensionError, match=INCONCLUSIVE) as info:
        jaxport.export(jax.jit(at_least_four_rows))(spec(jaxport, "b"))
    assert "consider adding the constraint 'b >= 4' to the SymbolicScope" in str(info.value)
    assert isinstance(info.value, ValueError) and isinstance(info.value, JaxportError)


def test_an_inconclusive_comparison_is_caught_as_jaxs_own_exception() -> None:
    with pytest.raises(jex_core.InconclusiveDimensionOperation, match=INCONCLUSIVE):
        jaxport.export(jax.jit(at_least_four_rows))(spec(jaxport, "b"))
    with pytest.raises(jax.errors.InconclusiveDimensionOperation, match=INCONCLUSIVE):
        jaxport.export(jax.jit(at_least_four_rows))(spec(jaxport, "b"))


def test_the_inconclusive_message_extends_jax_exports_message() -> None:
    ours = message_of(lambda: jaxport.export(jax.jit(at_least_four_rows))(spec(jaxport, "b")))
    theirs = message_of(lambda: jax.export.export(jax.jit(at_least_four_rows))(spec(jax.export, "b")))
    assert ours.startswith(theirs.rstrip("\n"))


def test_the_suggested_constraint_makes_the_comparison_conclusive() -> None:
    exp = jaxport.export(jax.jit(at_least_four_rows))(spec(jaxport, "b", ("b >= 4",)))
    assert str(exp.out_avals[0]) == "float32[4]"
    x = np.arange(6, dtype=np.float32)
    np.testing.assert_array_equal(exp.call(x), x[:4])


def causal_attention_mask(x: Any) -> Any:
    """GPT-2's pattern: a fixed 1024 x 1024 mask sliced to the sequence length t."""
    t = x.shape[1]
    mask = jnp.tril(jnp.ones((1024, 1024), F32))[:t, :t]
    return x[:, :, None] * mask[None]


def pad_to_length(x: Any) -> Any:
    """Compares a clipped dimension with the variable it clips."""
    w = jnp.ones(1024, F32)[:x.shape[0]]
    if w.shape[0] < x.shape[0]:
        w = jnp.pad(w, (0, x.shape[0] - w.shape[0]))
    return x + w


CLIP_NOTE = 'add constraints=("t <= 1024",) to the symbolic shape (min(1024, t) is then t)'


def test_a_dimension_clipped_by_a_constant_fails_with_a_note_naming_the_constraint() -> None:
    with pytest.raises(TypeError, match=re.escape("(1, min(1024, t), min(1024, t))")) as info:
        jaxport.export(jax.jit(causal_attention_mask))(spec(jaxport, "b, t"))
    notes = getattr(info.value, "__notes__", [])
    assert any(CLIP_NOTE in n and 'constraints=("t >= 1024",)' in n for n in notes), notes
    with pytest.raises(TypeError, match="incompatible shapes for broadcasting"):  # the same as jax.export
        jax.export.export(jax.jit(causal_attention_mask))(spec(jax.export, "b, t"))
    exp = jaxport.export(jax.jit(causal_attention_mask))(spec(jaxport, "b, t", ("t <= 1024",)))
    assert str(exp.out_avals[0]) == "float32[b,t,t]"
    x = np.ones((2, 5), np.float32)
    np.testing.assert_array_equal(exp.call(x), causal_attention_mask(x))


def test_an_inconclusive_comparison_of_a_clipped_dimension_notes_the_constraint() -> None:
    with pytest.raises(InconclusiveDimensionError, match=re.escape("'min(1024, t)' < 't' is inconclusive")) as info:
        jaxport.export(jax.jit(pad_to_length))(spec(jaxport, "t"))
    assert any(CLIP_NOTE in n for n in getattr(info.value, "__notes__", [])), info.value
    exp = jaxport.export(jax.jit(pad_to_length))(spec(jaxport, "t", ("t <= 1024",)))
    np.testing.assert_array_equal(exp.call(zeros(7)), np.ones(7, np.float32))


def test_failures_without_a_clipped_dimension_get_no_note() -> None:
    with pytest.raises(InconclusiveDimensionError) as info:
        jaxport.export(jax.jit(at_least_four_rows))(spec(jaxport, "b"))
    assert not any("constraints=(" in n for n in getattr(info.value, "__notes__", []))


def test_a_symbolic_dimension_used_as_a_constant_is_inconclusive_as_in_jax() -> None:
    ours = message_of(lambda: int(jaxport.symbolic_shape("b")[0]))
    theirs = message_of(lambda: int(jax.export.symbolic_shape("b")[0]))
    assert ours.startswith("Symbolic dimension 'b' used in a context that requires a constant")
    assert ours == theirs
    with pytest.raises(InconclusiveDimensionError):
        int(jaxport.symbolic_shape("b")[0])


# --------------------------------------------------------------------------
# At export: dimension variables that cannot be solved
# --------------------------------------------------------------------------

UNSOLVABLE = (r"Cannot solve for values of dimension variables \{'b'\}\. We can only solve linear "
              r"uni-variate constraints\. Using the following polymorphic shapes specifications: "
              r"args\[0\]\.shape = \(b\^2,\)\. Unprocessed specifications: 'b\^2' for dimension size "
              r"args\[0\]\.shape\[0\]\.")


def test_a_quadratic_dimension_alone_is_unsolvable_when_exporting() -> None:
    with pytest.raises(UnsolvableDimensionError, match=UNSOLVABLE):
        jaxport.export(jax.jit(jnp.sin))(spec(jaxport, "b*b"))


def test_the_unsolvable_message_is_jax_exports() -> None:
    ours = message_of(lambda: jaxport.export(jax.jit(jnp.sin))(spec(jaxport, "b*b")))
    theirs = message_of(lambda: jax.export.export(jax.jit(jnp.sin))(spec(jax.export, "b*b")))
    assert ours == theirs


def test_a_sum_of_two_variables_alone_is_unsolvable_and_names_both() -> None:
    with pytest.raises(UnsolvableDimensionError,
                       match=r"Cannot solve for values of dimension variables \{'[bc]', '[bc]'\}.*"
                             r"Unprocessed specifications: 'c \+ b' for dimension size args\[0\]\.shape\[0\]"):
        jaxport.export(jax.jit(jnp.sin))(spec(jaxport, "b + c"))


def test_a_quadratic_dimension_is_checked_once_its_variable_is_solved_elsewhere() -> None:
    def f(x: Any, y: Any) -> Any:
        return x.sum() + y.sum()

    exports = [export_with(lib)(jax.jit(f))(*[jax.ShapeDtypeStruct((d,), F32) for d in lib.symbolic_shape("b*b, b")])
               for lib in (jaxport, jax.export)]
    assert [str(a) for a in exports[0].in_avals] == ["float32[b^2]", "float32[b]"]
    assert float(exports[0].call(np.ones(9, np.float32), np.ones(3, np.float32))) == 12.0
    ours, theirs = (message_of(lambda: e.call(zeros(8), zeros(3))) for e in exports)
    assert ours == theirs
    assert ("Found inconsistency between dimension size args[0].shape[0] (= 8) and the specification "
            "'b^2' (= 9)") in ours


def test_a_dimension_variable_absent_from_the_arguments_is_named() -> None:
    a, b = jaxport.symbolic_shape("a, b")
    with pytest.raises(ValueError, match=r"(?s)dimension variable 'a'.*\['b'\]"):
        jaxport.export(jax.jit(lambda x: jnp.ones((a,))))(jax.ShapeDtypeStruct((b,), F32))


def test_a_dimension_variable_absent_from_the_arguments_reads_as_in_jax() -> None:
    def attempt(lib: Any) -> str:
        a, b = lib.symbolic_shape("a, b")
        return message_of(lambda: export_with(lib)(jax.jit(lambda x: jnp.ones((a,))))(
            jax.ShapeDtypeStruct((b,), F32)))

    assert attempt(jaxport) == attempt(jax.export)


# --------------------------------------------------------------------------
# Malformed specs and constraints
# --------------------------------------------------------------------------

MALFORMED = [
    # spec, dimension, parsed, remaining, the message is jax.export's
    ("b,,", 1, "b,", ",", True),
    ("2*", 0, "2*", "", False),
    ("floordiv(b)", 0, "floordiv(b", ")", True),
    ("max(b)", 0, "max(b", ")", True),
    ("mod(b, 2, 3)", 0, "mod(b, 2", ", 3)", True),
    ("(b", 0, "(b", "", False),
    ("b)", 1, "b", ")", True),
    ("b + ", 0, "b + ", "", False),
    ("b, c d", 1, "b, c ", "d", False),
]


@pytest.mark.parametrize(("shape_spec", "dimension", "parsed", "remaining", "as_jax"), MALFORMED,
                         ids=[m[0] for m in MALFORMED])
def test_a_malformed_spec_is_reported_with_its_position(shape_spec: str, dimension: int, parsed: str,
                                                        remaining: str, as_jax: bool) -> None:
    with pytest.raises(ShapeSpecSyntaxError) as info:
        jaxport.symbolic_shape(shape_spec)
    message = str(info.value)
    assert message.startswith(f"syntax error in symbolic shape '{shape_spec}' in dimension {dimension}: ")
    assert message.endswith(f"Parsed '{parsed}', remaining '{remaining}'.")
    assert (info.value.spec, info.value.dimension, info.value.position) == (shape_spec, dimension, len(parsed))
    assert isinstance(info.value, ValueError)
    if as_jax:
        assert message == message_of(lambda: jax.export.symbolic_shape(shape_spec))


def test_a_malformed_spec_in_args_specs_is_reported() -> None:
    with pytest.raises(ShapeSpecSyntaxError, match=r"syntax error in symbolic shape 'b, 2\*' in dimension 1"):
        jaxport.symbolic_args_specs((zeros(2, 2), zeros(3)), ("b, 2*", "c"))


def test_a_placeholder_without_a_known_dimension_is_reported_as_in_jax() -> None:
    with pytest.raises(ShapeSpecSyntaxError,
                       match=r"unexpected placeholder for unknown dimension; like=\(2, None\)"):
        jaxport.symbolic_shape("b, _", like=(2, None))


def test_a_constant_that_contradicts_the_like_shape_is_refused() -> None:
    with pytest.raises(ShapeSpecSyntaxError, match=r"different size 3 for known dimension; like=\(2, 4\)"):
        jaxport.symbolic_shape("b, 3", like=(2, 4))


def test_a_specs_pytree_that_is_not_a_prefix_of_the_arguments_is_refused() -> None:
    with pytest.raises(ValueError, match="different lengths of tuple"):
        jaxport.symbolic_args_specs((zeros(2), zeros(3)), ("b", "c", "d"))


@pytest.mark.parametrize(("constraint", "message"), [
    ("b > 3", "Constraint parsing error: must contain one of '==' or '>=' or '<='"),
    ("3 == 4", "Unsatisfiable explicit constraint: 3 == 4"),
])
def test_a_bad_constraint_is_refused_as_in_jax(constraint: str, message: str) -> None:
    with pytest.raises(ConstraintError, match=re.escape(message)):
        jaxport.symbolic_shape("b", constraints=(constraint,))
    assert message_of(lambda: jax.export.symbolic_shape("b", constraints=(constraint,))).startswith(message)


def test_a_malformed_constraint_expression_reports_its_position() -> None:
    with pytest.raises(ShapeSpecSyntaxError, match=r"'b >= c \+ '.*Parsed 'b >= c \+ ', remaining ''"):
        jaxport.symbolic_shape("b, c", constraints=("b >= c + ",))


def test_constraints_given_as_one_string_are_refused_as_in_jax() -> None:
    message = "The symbolic constraints should be a sequence of strings. Got 'b >= 2'"
    with pytest.raises(ValueError, match=re.escape(message)):
        jaxport.symbolic_shape("b", constraints="b >= 2")
    assert message_of(lambda: jax.export.symbolic_shape("b", constraints="b >= 2")) == message


def test_both_a_scope_and_constraints_are_refused_as_in_jax() -> None:
    message = "Cannot specify both a `scope` and `constraints`."
    with pytest.raises(ValueError, match=re.escape(message)):
        jaxport.symbolic_shape("b", constraints=("b >= 2",), scope=jaxport.SymbolicScope())
    with pytest.raises(ValueError, match=re.escape(message)):
        jaxport.symbolic_args_specs((zeros(2),), "b", constraints=("b >= 2",), scope=jaxport.SymbolicScope())
    assert message_of(lambda: jax.export.symbolic_shape(
        "b", constraints=("b >= 2",), scope=jax.export.SymbolicScope())) == message


# --------------------------------------------------------------------------
# Scopes
# --------------------------------------------------------------------------


def two_scopes(lib: Any) -> tuple[Any, Any]:
    """``a`` and ``b`` from two scopes (created on the same lines for both libraries)."""
    a, = lib.symbolic_shape("a", constraints=("a >= 2",))
    b, = lib.symbolic_shape("b", constraints=("b >= 2",))
    return a, b


def without_ids(message: str) -> str:
    return re.sub(r"scope \d+ created", "scope <id> created", message)


def test_dimensions_of_two_scopes_in_one_export_name_both_scopes_and_arguments() -> None:
    a, b = two_scopes(jaxport)
    with pytest.raises(ScopeMixingError, match=r"Invalid mixing of symbolic scopes when exporting <lambda>\.") as info:
        jaxport.export(jax.jit(lambda x, y: x.sum() + y.sum()))(jax.ShapeDtypeStruct((a,), F32),
                                                               jax.ShapeDtypeStruct((b,), F32))
    message = str(info.value)
    assert "a >= 2" in message and "b >= 2" in message
    assert "args[0]" in message and "args[1]" in message and "for 'b'" in message
    assert message.count("created at") == 2 and "(two_scopes)" in message


def test_scope_mixing_at_export_reads_as_in_jax() -> None:
    def attempt(lib: Any) -> str:
        a, b = two_scopes(lib)
        return message_of(lambda: export_with(lib)(jax.jit(lambda x, y: x.sum() + y.sum()))(
            jax.ShapeDtypeStruct((a,), F32), jax.ShapeDtypeStruct((b,), F32)))

    assert without_ids(attempt(jaxport)) == without_ids(attempt(jax.export))


@pytest.mark.parametrize(("operation", "what"), [("add", "for linear combination."),
                                                  ("compare", "when comparing 'a' >= 'b'.")])
def test_arithmetic_across_scopes_is_refused_as_in_jax(operation: str, what: str) -> None:
    def combine(lib: Any) -> Any:
        a, b = two_scopes(lib)
        return a + b if operation == "add" else a >= b

    with pytest.raises(ScopeMixingError, match="^" + re.escape(f"Invalid mixing of symbolic scopes {what}")):
        combine(jaxport)
    assert without_ids(message_of(lambda: combine(jaxport))) == without_ids(message_of(lambda: combine(jax.export)))


# --------------------------------------------------------------------------
# At call time: each kind of violated constraint
# --------------------------------------------------------------------------

PREFIX = "Input shapes do not match the polymorphic shapes specification. "
SUFFIX = f" Please see {JAX_DOCS.shape_poly}#shape-assertion-errors for more details."


@dataclass(frozen=True)
class BadCall:
    """An export with symbolic specs and a call that violates them."""

    name: str
    fun: Callable[..., Any]
    specs: Any  # a prefix of (args, kwargs)
    like: tuple[tuple[Any, ...], dict[str, Any]]
    bad: tuple[tuple[Any, ...], dict[str, Any]]
    error: type[Exception]
    message: str  # the whole message
    constraints: tuple[str, ...] = field(default=())


def _sum_all(*args: Any, **kwargs: Any) -> Any:
    return sum(jnp.sum(a) for a in jax.tree.leaves((args, kwargs)))


def _one_var(b: int, dim: str, value: int) -> str:
    return f"'{dim}' = {value} from specification '{dim}' for dimension args[{b}].shape[0] (= {value}), "


BAD_CALLS = [
    BadCall("a_variable_below_one", _sum_all, (("b, 3",), {}), ((zeros(2, 3),), {}), ((zeros(0, 3),), {}),
            ShapeAssertionError,
            PREFIX + "Expected value >= 1 for dimension variable 'b'. Using the following polymorphic shapes "
            "specifications: args[0].shape = (b, 3). Obtained dimension variables: " + _one_var(0, "b", 0) +
            "." + SUFFIX),
    BadCall("a_linear_variable_below_one", _sum_all, (("2*h + 1",), {}), ((zeros(3),), {}), ((zeros(1),), {}),
            ShapeAssertionError,
            PREFIX + "Expected value >= 1 for dimension variable 'h'. Using the following polymorphic shapes "
            "specifications: args[0].shape = (2*h + 1,). Obtained dimension variables: 'h' = 0 from "
            "specification '2*h + 1' for dimension args[0].shape[0] (= 1), ." + SUFFIX),
    BadCall("a_dimension_not_divisible", _sum_all, (("2*b",), {}), ((zeros(4),), {}), ((zeros(5),), {}),
            ShapeAssertionError,
            PREFIX + "Division had remainder 1 when computing the value of 'b'. Using the following polymorphic "
            "shapes specifications: args[0].shape = (2*b,). Obtained dimension variables: ." + SUFFIX),
    BadCall("two_dimensions_that_must_be_equal", _sum_all, (("b", "b"), {}), ((zeros(2), zeros(2)), {}),
            ((zeros(3), zeros(4)), {}), ShapeAssertionError,
            PREFIX + "Found inconsistency between dimension size args[1].shape[0] (= 4) and the specification "
            "'b' (= 3). Using the following polymorphic shapes specifications: args[0].shape = (b,),"
            "args[1].shape = (b,). Obtained dimension variables: " + _one_var(0, "b", 3) + "." + SUFFIX),
    BadCall("equal_dimensions_in_a_nested_argument", _sum_all, (({"a": "b, 2*b"},), {}),
            (({"a": zeros(2, 4)},), {}), (({"a": zeros(2, 3)},), {}), ShapeAssertionError,
            PREFIX + "Found inconsistency between dimension size args[0]['a'].shape[1] (= 3) and the "
            "specification '2*b' (= 4). Using the following polymorphic shapes specifications: "
            "args[0]['a'].shape = (b, 2*b). Obtained dimension variables: 'b' = 2 from specification 'b' "
            "for dimension args[0]['a'].shape[0] (= 2), ." + SUFFIX),
    BadCall("equal_dimensions_in_a_keyword_argument", _sum_all, (("b",), {"y": "b"}),
            ((zeros(2),), {"y": zeros(2)}), ((zeros(3),), {"y": zeros(4)}), ShapeAssertionError,
            PREFIX + "Found inconsistency between dimension size kwargs['y'].shape[0] (= 4) and the "
            "specification 'b' (= 3). Using the following polymorphic shapes specifications: args[0].shape = "
            "(b,),kwargs['y'].shape = (b,). Obtained dimension variables: " + _one_var(0, "b", 3) + "." + SUFFIX),
    BadCall("a_lower_bound_constraint", _sum_all, (("b",), {}), ((zeros(16),), {}), ((zeros(8),), {}),
            ShapeAssertionError,
            "Input shapes do not match the symbolic shape constraint b >= 16. Expected 'b - 16' to be greater "
            "or equal to 0, but found -8.  Using the following polymorphic shapes specifications: "
            "args[0].shape = (b,). Obtained dimension variables: " + _one_var(0, "b", 8) + "." + SUFFIX,
            constraints=("b >= 16",)),
    BadCall("an_upper_bound_constraint", _sum_all, (("b",), {}), ((zeros(2),), {}), ((zeros(5),), {}),
            ShapeAssertionError,
            "Input shapes do not match the symbolic shape constraint b <= 4. Expected '- b + 4' to be greater "
            "or equal to 0, but found -1.  Using the following polymorphic shapes specifications: "
            "args[0].shape = (b,). Obtained dimension variables: " + _one_var(0, "b", 5) + "." + SUFFIX,
            constraints=("b <= 4",)),
    BadCall("an_equality_constraint_that_rewrites_a_variable", _sum_all, (("h", "w"), {}),
            ((zeros(4), zeros(2)), {}), ((zeros(5), zeros(2)), {}), ShapeAssertionError,
            PREFIX + "Division had remainder 1 when computing the value of 'w'. Using the following polymorphic "
            "shapes specifications: args[0].shape = (2*w,),args[1].shape = (w,). Obtained dimension "
            "variables: ." + SUFFIX,
            constraints=("h == 2*w",)),
    BadCall("a_floordiv_equality_constraint", _sum_all, (("a, b", "c"), {}), ((zeros(4, 2), zeros(2)), {}),
            ((zeros(6, 2), zeros(2)), {}), ShapeAssertionError,
            "Input shapes do not match the symbolic shape constraint floordiv(a, b) == c. Expected "
            "'floordiv(a, b) - c' to be equal to 0, but found 1.  Using the following polymorphic shapes "
            "specifications: args[0].shape = (a, b),args[1].shape = (c,). Obtained dimension variables: "
            "'a' = 6 from specification 'a' for dimension args[0].shape[0] (= 6), 'b' = 2 from specification "
            "'b' for dimension args[0].shape[1] (= 2), " + _one_var(1, "c", 2) + "." + SUFFIX,
            constraints=("floordiv(a, b) == c",)),
    BadCall("a_constant_dimension_that_differs", _sum_all, (("b, 3",), {}), ((zeros(2, 3),), {}),
            ((zeros(2, 4),), {}), ShapeMismatchError,
            "Shape mismatch for args[0].shape[1] (expected same constant): expected (b, 3) and called with (2, 4)"),
    BadCall("a_rank_that_differs", _sum_all, (("b, 3",), {}), ((zeros(2, 3),), {}), ((zeros(2),), {}),
            RankMismatchError, "Rank mismatch for args[0]: expected (b, 3) and called with (2,)"),
]
BAD_BY_NAME = {bad.name: bad for bad in BAD_CALLS}


@functools.cache
def exported_bad(name: str, exporter: str = "jaxport") -> Any:
    bad = BAD_BY_NAME[name]
    lib: Any = jaxport if exporter == "jaxport" else jax.export
    args, kwargs = lib.symbolic_args_specs(bad.like, bad.specs, constraints=bad.constraints)
    return export_with(lib)(jax.jit(bad.fun))(*args, **kwargs)


@pytest.mark.parametrize("name", list(BAD_BY_NAME))
@pytest.mark.parametrize("mode", ["eagerly", "under_jit"])
def test_a_call_that_violates_the_specification_names_path_variable_value_and_spec(name: str, mode: str) -> None:
    bad = BAD_BY_NAME[name]
    exp = exported_bad(name)
    call = exp.call if mode == "eagerly" else jax.jit(exp.call)
    args, kwargs = bad.bad
    with pytest.raises(bad.error, match=re.escape(bad.message)) as info:
        call(*args, **kwargs)
    assert str(info.value) == bad.message
    good_args, good_kwargs = bad.like
    np.testing.assert_allclose(call(*good_args, **good_kwargs), _sum_all(*good_args, **good_kwargs))


@pytest.mark.parametrize("name", list(BAD_BY_NAME))
def test_a_violated_specification_reads_as_in_jax_export(name: str) -> None:
    args, kwargs = BAD_BY_NAME[name].bad
    ours = message_of(lambda: exported_bad(name).call(*args, **kwargs))
    theirs = message_of(lambda: exported_bad(name, "jax").call(*args, **kwargs))
    assert ours == theirs


def test_violations_are_value_errors_as_in_jax() -> None:
    assert all(issubclass(bad.error, ValueError) for bad in BAD_CALLS)
    assert issubclass(ShapeAssertionError, JaxportError)


def test_a_shape_spec_that_is_not_a_string_is_refused_as_in_jax() -> None:
    for symbolic_args_specs in (jaxport.symbolic_args_specs, jax.export.symbolic_args_specs):
        with pytest.raises(ValueError, match=re.escape("polymorphic shape spec should be None or a string. Found 5.0.")):
            symbolic_args_specs([np.zeros(2, np.float32)], [5.0])
