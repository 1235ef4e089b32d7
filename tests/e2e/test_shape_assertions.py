"""End to end: the shape assertions in a polymorphic module are real.

jaxport checks the argument shapes of a call statically, before the module
runs. The module itself carries the same checks as ``shape_assertion`` custom
calls, for consumers that skip jaxport's check. To play such a consumer, the
serialized module is wrapped as a raw module whose argument specs are the
*static* shapes of a bad call: jaxport's static solve then has nothing symbolic
to check, JAX refines the module's shapes when compiling it, the assertion's
predicate folds to false, and compilation fails with the assertion's message.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport
from jaxport import DisabledSafetyCheck


def _sum_all(*args: Any) -> Any:
    return sum(jnp.sum(a) for a in args)


@dataclass(frozen=True)
class Violation:
    """Specs with one constraint, shapes that satisfy it and shapes that violate it."""

    name: str
    specs: tuple[str, ...]
    good: tuple[tuple[int, ...], ...]
    bad: tuple[tuple[int, ...], ...]
    fragment: str  # what the assertion says, in the message of the failed compilation
    constraints: tuple[str, ...] = ()


VIOLATIONS = [
    Violation("a_variable_below_one", ("b, 3",), ((2, 3),), ((0, 3),),
              "Expected value >= 1 for dimension variable 'b'"),
    Violation("a_dimension_not_divisible", ("2*b, 3",), ((4, 3),), ((5, 3),),
              "Division had remainder 1 when computing the value of 'b'"),
    Violation("two_dimensions_that_must_be_equal", ("b", "b"), ((3,), (3,)), ((3,), (4,)),
              "Found inconsistency between dimension size args[1].shape[0] (= 4) and the specification 'b' (= 3)"),
    Violation("a_user_constraint", ("b",), ((16,),), ((8,),),
              "Input shapes do not match the symbolic shape constraint b >= 16. "
              "Expected 'b - 16' to be greater or equal to 0, but found -8.", constraints=("b >= 16",)),
    Violation("an_equality_constraint", ("h", "w"), ((4,), (2,)), ((6,), (2,)),
              "Found inconsistency between dimension size args[1].shape[0] (= 2) and the specification 'w' (= 3)",
              constraints=("h == 2*w",)),
]
BY_NAME = {v.name: v for v in VIOLATIONS}


def _zeros(shapes: tuple[tuple[int, ...], ...]) -> list[np.ndarray]:
    return [np.full(s, 0.5, np.float32) for s in shapes]


@functools.cache
def exported(name: str, exporter: str = "jaxport", assertions: bool = True) -> Any:
    v = BY_NAME[name]
    lib: Any = jaxport if exporter == "jaxport" else jax.export
    export = jaxport.export if exporter == "jaxport" else jax.export.export
    disabled: tuple[Any, ...] = () if assertions else (DisabledSafetyCheck.shape_assertions(),)  # jaxport only
    specs = lib.symbolic_args_specs(tuple(_zeros(v.good)), v.specs, constraints=v.constraints)
    return export(jax.jit(_sum_all), disabled_checks=disabled)(*specs)


def raw_module_for(exp: Any, shapes: tuple[tuple[int, ...], ...]) -> jaxport.Exported:
    """The module of ``exp`` as a raw module with static argument specs of ``shapes``.

    The static specs leave jaxport nothing to check at call time. The module's
    ``main`` takes dynamic shapes, so it needs shape refinement (which JAX runs
    when ``uses_global_constants`` is set): record that, as a consumer of a
    polymorphic module would, in the export's record.
    """
    raw = jaxport.Exported.from_module(
        exp.mlir_module_serialized, in_specs=_zeros(shapes), out_specs=np.zeros((), np.float32),
        platforms=("cpu",), calling_convention_version=exp.calling_convention_version)
    return jaxport.Exported(dataclasses.replace(raw.record, uses_global_constants=True))


def messages_of(error: BaseException) -> str:
    """The messages of ``error`` and of the exceptions it was raised from."""
    parts = []
    current: BaseException | None = error
    while current is not None:
        parts.append(str(current))
        current = current.__cause__ or current.__context__
    return "\n".join(parts)


def assertion_messages(exp: Any) -> list[str]:
    return re.findall(r'stablehlo\.custom_call @shape_assertion\([^)]*\) \{[^}]*error_message = "([^"]*)"',
                      exp.mlir_module())


@pytest.mark.parametrize("name", list(BY_NAME))
def test_the_module_alone_runs_for_shapes_that_satisfy_the_constraints(name: str) -> None:
    v = BY_NAME[name]
    raw = raw_module_for(exported(name), v.good)
    np.testing.assert_allclose(jax.jit(raw.call)(*_zeros(v.good)), _sum_all(*_zeros(v.good)))


@pytest.mark.parametrize("name", list(BY_NAME))
@pytest.mark.parametrize("mode", ["eagerly", "under_jit"])
def test_the_module_alone_fails_with_the_assertions_message_for_shapes_that_violate_them(
        name: str, mode: str) -> None:
    v = BY_NAME[name]
    raw = raw_module_for(exported(name), v.bad)
    call: Callable[..., Any] = raw.call if mode == "eagerly" else jax.jit(raw.call)
    with pytest.raises(ValueError, match="Error refining shapes") as info:
        call(*_zeros(v.bad))
    text = messages_of(info.value)
    assert "Module shape refinement failed" in text
    assert v.fragment in text


@pytest.mark.parametrize("name", list(BY_NAME))
def test_the_assertion_says_what_the_static_check_says(name: str) -> None:
    v = BY_NAME[name]
    with pytest.raises(ValueError) as static:
        exported(name).call(*_zeros(v.bad))
    with pytest.raises(ValueError) as refined:
        raw_module_for(exported(name), v.bad).call(*_zeros(v.bad))
    assert v.fragment in str(static.value)
    assert str(static.value) in messages_of(refined.value)


@pytest.mark.parametrize("name", list(BY_NAME))
def test_the_module_asserts_what_jax_exports_module_asserts(name: str) -> None:
    ours, theirs = assertion_messages(exported(name)), assertion_messages(exported(name, "jax"))
    assert ours and sorted(ours) == sorted(theirs)


def test_disabling_shape_assertions_leaves_none_in_the_module() -> None:
    name = "a_dimension_not_divisible"
    assert "stablehlo.custom_call @shape_assertion" in exported(name).mlir_module()
    unchecked = exported(name, assertions=False)
    assert DisabledSafetyCheck.shape_assertions() in unchecked.disabled_safety_checks
    assert "@shape_assertion" not in unchecked.mlir_module()


def test_without_assertions_the_module_alone_runs_even_for_violating_shapes() -> None:
    v = BY_NAME["a_dimension_not_divisible"]
    raw = raw_module_for(exported(v.name, assertions=False), v.bad)
    np.testing.assert_allclose(jax.jit(raw.call)(*_zeros(v.bad)), _sum_all(*_zeros(v.bad)))


def test_without_assertions_in_the_module_the_call_still_checks_statically() -> None:
    v = BY_NAME["a_dimension_not_divisible"]
    with pytest.raises(ValueError, match=re.escape(v.fragment)):
        exported(v.name, assertions=False).call(*_zeros(v.bad))
