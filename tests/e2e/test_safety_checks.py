"""End to end: the safety checks at export, and disabling them.

Custom calls without compatibility guarantees and host callbacks are refused
when exporting; ``DisabledSafetyCheck.custom_call`` lets a custom call through.
The custom-call functions are only lowered, never run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import io_callback

import jaxport
from jaxport import DisabledSafetyCheck
from jaxport.errors import DisallowedCustomCallError, ExportError, HostCallbackError, JaxportError

SPEC = jax.ShapeDtypeStruct((3,), jnp.float32)


def custom_kernel(x: Any) -> Any:
    return jax.ffi.ffi_call("my_custom_target", jax.ShapeDtypeStruct(x.shape, x.dtype))(x) + 1.0


def two_custom_kernels(x: Any) -> Any:
    y = jax.ffi.ffi_call("my_custom_target", jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
    return jax.ffi.ffi_call("other_custom_target", jax.ShapeDtypeStruct(x.shape, x.dtype))(y)


# --------------------------------------------------------------------------
# Custom calls
# --------------------------------------------------------------------------


def test_a_custom_call_without_guarantees_is_refused_with_its_operation_and_location() -> None:
    with pytest.raises(DisallowedCustomCallError,
                       match=r"Cannot serialize code with custom calls whose targets have no "
                             r"compatibility guarantees") as info:
        jaxport.export(jax.jit(custom_kernel))(SPEC)
    (offender,) = info.value.offenders
    assert "stablehlo.custom_call @my_custom_target" in offender
    assert " at loc(" in offender
    assert "test_safety_checks.py" in offender
    assert offender in str(info.value)
    assert "DisabledSafetyCheck.custom_call" in str(info.value)


def test_every_disallowed_custom_call_is_listed() -> None:
    with pytest.raises(DisallowedCustomCallError) as info:
        jaxport.export(jax.jit(two_custom_kernels))(SPEC)
    assert len(info.value.offenders) == 2
    assert "@my_custom_target" in info.value.offenders[0]
    assert "@other_custom_target" in info.value.offenders[1]


def test_the_custom_call_error_is_a_value_error_like_jax_export_raises() -> None:
    assert issubclass(DisallowedCustomCallError, ValueError)
    assert issubclass(DisallowedCustomCallError, ExportError)
    with pytest.raises(ValueError, match="my_custom_target"):
        jax.export.export(jax.jit(custom_kernel))(SPEC)


def test_disabling_the_check_for_the_target_allows_the_custom_call() -> None:
    check = DisabledSafetyCheck.custom_call("my_custom_target")
    exp = jaxport.export(jax.jit(custom_kernel), disabled_checks=[check])(SPEC)
    assert exp.disabled_safety_checks == (check,)
    assert "stablehlo.custom_call @my_custom_target" in exp.mlir_module()
    assert exp.out_avals[0].shape == (3,)


def test_the_allowed_custom_call_module_is_byte_identical_to_jax_export() -> None:
    ours = jaxport.export(jax.jit(custom_kernel),
                          disabled_checks=[DisabledSafetyCheck.custom_call("my_custom_target")])(SPEC)
    theirs = jax.export.export(
        jax.jit(custom_kernel),
        disabled_checks=[jax.export.DisabledSafetyCheck.custom_call("my_custom_target")])(SPEC)
    assert ours.mlir_module_serialized == theirs.mlir_module_serialized


def test_disabling_the_check_for_another_target_does_not_allow_the_custom_call() -> None:
    with pytest.raises(DisallowedCustomCallError, match="my_custom_target") as info:
        jaxport.export(jax.jit(two_custom_kernels),
                       disabled_checks=[DisabledSafetyCheck.custom_call("other_custom_target")])(SPEC)
    (offender,) = info.value.offenders
    assert "@my_custom_target" in offender


def test_disabling_the_check_for_all_targets_allows_every_custom_call() -> None:
    exp = jaxport.export(jax.jit(two_custom_kernels),
                         disabled_checks=[DisabledSafetyCheck.custom_call("ALL")])(SPEC)
    module = exp.mlir_module()
    assert "@my_custom_target" in module
    assert "@other_custom_target" in module


def test_disabled_checks_must_be_disabled_safety_checks() -> None:
    with pytest.raises(TypeError, match="DisabledSafetyCheck"):
        not_a_check: Any = "custom_call:my_custom_target"
        jaxport.export(jax.jit(custom_kernel), disabled_checks=[not_a_check])(SPEC)


def _square(n: int, dtype: Any = np.float32) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct((n, n), dtype)


LAPACK_CASES: list[tuple[str, Callable[..., Any], jax.ShapeDtypeStruct, str]] = [
    ("cholesky_float32", jnp.linalg.cholesky, _square(4), "lapack_spotrf_ffi"),
    ("cholesky_complex64", jnp.linalg.cholesky, _square(4, np.complex64), "lapack_cpotrf_ffi"),
    ("qr", jnp.linalg.qr, _square(4), "lapack_sgeqrf_ffi"),
    ("eigh", jnp.linalg.eigh, _square(4), "lapack_ssyevd_ffi"),
    ("svd", jnp.linalg.svd, _square(4), "lapack_sgesdd_ffi"),
    ("lu", jax.scipy.linalg.lu, _square(4), "lapack_sgetrf_ffi"),
    ("eig", jnp.linalg.eig, _square(4), "lapack_sgeev_ffi"),
]


@pytest.mark.parametrize(("fun", "spec", "target"), [c[1:] for c in LAPACK_CASES],
                         ids=[c[0] for c in LAPACK_CASES])
def test_allowlisted_lapack_targets_export_without_disabling_checks(
        fun: Callable[..., Any], spec: jax.ShapeDtypeStruct, target: str) -> None:
    exp = jaxport.export(jax.jit(fun))(spec)
    assert f"stablehlo.custom_call @{target}" in exp.mlir_module()
    assert exp.disabled_safety_checks == ()


# --------------------------------------------------------------------------
# Host callbacks
# --------------------------------------------------------------------------


def debug_print(x: Any) -> Any:
    jax.debug.print("x = {x}", x=x)
    return x + 1.0


def debug_callback(x: Any) -> Any:
    jax.debug.callback(lambda v: None, x)
    return x + 1.0


def pure_callback(x: Any) -> Any:
    return jax.pure_callback(lambda v: np.asarray(v) * 2, jax.ShapeDtypeStruct(x.shape, x.dtype), x)


def unordered_io_callback(x: Any) -> Any:
    return io_callback(lambda v: np.asarray(v) * 2, jax.ShapeDtypeStruct(x.shape, x.dtype), x)


def ordered_io_callback(x: Any) -> Any:
    return io_callback(lambda v: np.asarray(v) * 2, jax.ShapeDtypeStruct(x.shape, x.dtype), x,
                       ordered=True)


@pytest.mark.parametrize("fun", [debug_print, debug_callback, pure_callback, unordered_io_callback,
                                 ordered_io_callback], ids=lambda fun: fun.__name__)
def test_a_host_callback_is_refused_with_why_it_cannot_be_serialized(fun: Callable[..., Any]) -> None:
    with pytest.raises(HostCallbackError,
                       match=f"Cannot export '{fun.__name__}': serialization of host_callbacks "
                             "is not yet implemented") as info:
        jaxport.export(jax.jit(fun))(SPEC)
    assert isinstance(info.value, NotImplementedError)
    assert "runs Python code of the exporting process" in str(info.value)
    assert "could not run where the artifact is loaded" in str(info.value)


def test_a_host_callback_is_refused_even_with_all_custom_calls_allowed() -> None:
    with pytest.raises(HostCallbackError):
        jaxport.export(jax.jit(pure_callback),
                       disabled_checks=[DisabledSafetyCheck.custom_call("ALL")])(SPEC)


def test_a_host_callback_is_refused_by_jax_export_too() -> None:
    with pytest.raises(NotImplementedError,
                       match="serialization of host_callbacks is not yet implemented"):
        jax.export.export(jax.jit(pure_callback))(SPEC)


# --------------------------------------------------------------------------
# DisabledSafetyCheck values
# --------------------------------------------------------------------------


def test_disabled_safety_checks_are_equal_by_value() -> None:
    assert DisabledSafetyCheck.platform() == DisabledSafetyCheck.platform()
    assert DisabledSafetyCheck.custom_call("a") == DisabledSafetyCheck.custom_call("a")
    assert DisabledSafetyCheck.custom_call("a") != DisabledSafetyCheck.custom_call("b")
    assert DisabledSafetyCheck.platform() != DisabledSafetyCheck.shape_assertions()
    assert DisabledSafetyCheck.platform() != DisabledSafetyCheck.custom_call("platform")


def test_disabled_safety_checks_hash_by_value() -> None:
    checks = {DisabledSafetyCheck.platform(), DisabledSafetyCheck.platform(),
              DisabledSafetyCheck.custom_call("a"), DisabledSafetyCheck.custom_call("a"),
              DisabledSafetyCheck.custom_call("b")}
    assert len(checks) == 3
    assert hash(DisabledSafetyCheck.custom_call("a")) == hash(DisabledSafetyCheck.custom_call("a"))


def test_str_gives_the_wire_form_of_jax_export() -> None:
    assert str(DisabledSafetyCheck.platform()) == "platform"
    assert str(DisabledSafetyCheck.custom_call("my_kernel")) == "custom_call:my_kernel"
    assert str(DisabledSafetyCheck.shape_assertions()) == "shape_assertions"
    assert str(DisabledSafetyCheck.platform()) == str(jax.export.DisabledSafetyCheck.platform())
    assert (str(DisabledSafetyCheck.custom_call("my_kernel"))
            == str(jax.export.DisabledSafetyCheck.custom_call("my_kernel")))


def test_is_custom_call_names_the_target_or_none() -> None:
    assert DisabledSafetyCheck.custom_call("my_kernel").is_custom_call() == "my_kernel"
    assert DisabledSafetyCheck.platform().is_custom_call() is None
    assert DisabledSafetyCheck.shape_assertions().is_custom_call() is None


def test_the_public_disabled_safety_check_is_the_one_the_errors_mention() -> None:
    assert jaxport.DisabledSafetyCheck is DisabledSafetyCheck
    assert issubclass(HostCallbackError, JaxportError)
