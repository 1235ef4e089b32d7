"""End to end: the 2023 names and the small conveniences of ``Exported``."""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport

SPEC = jax.ShapeDtypeStruct((2, 3), jnp.float32)
X = np.arange(6, dtype=np.float32).reshape(2, 3)


def softplus_sum(x: Any) -> Any:
    return jnp.sum(jnp.logaddexp(x, 0.0), axis=1)


def expected(x: np.ndarray) -> np.ndarray:
    return np.asarray(np.sum(np.logaddexp(x, np.float32(0.0)), axis=1), np.float32)


@functools.cache
def exported() -> jaxport.Exported:
    return jaxport.export(jax.jit(softplus_sum))(SPEC)


def test_call_exported_returns_a_function_that_calls_the_export() -> None:
    call = jaxport.call_exported(exported())
    np.testing.assert_allclose(call(X), expected(X), rtol=1e-6)
    np.testing.assert_allclose(jax.jit(call)(X), expected(X), rtol=1e-6)


def test_call_exported_checks_its_arguments_like_call() -> None:
    with pytest.raises(jaxport.errors.ShapeMismatchError, match=r"args\[0\]\.shape\[0\]"):
        jaxport.call_exported(exported())(np.zeros((4, 3), np.float32))


def test_call_exported_refuses_what_is_not_an_exported() -> None:
    with pytest.raises(TypeError, match="jaxport.Exported"):
        jaxport.call_exported(softplus_sum)  # type: ignore[arg-type]


def test_lowering_platforms_is_accepted_by_export_and_read_from_exported() -> None:
    exp = jaxport.export(jax.jit(softplus_sum), lowering_platforms=("cpu", "cuda"))(SPEC)
    assert exp.platforms == ("cpu", "cuda")
    assert exp.lowering_platforms == ("cpu", "cuda")
    np.testing.assert_allclose(exp.call(X), expected(X), rtol=1e-6)


def test_lowering_platforms_of_a_default_export_is_the_cpu() -> None:
    assert exported().lowering_platforms == ("cpu",)
    assert exported().lowering_platforms == exported().platforms


def test_a_plain_function_is_jitted_as_the_2023_api_did() -> None:
    exp = jaxport.export(softplus_sum)(SPEC)
    assert exp.fun_name == "softplus_sum"
    assert exp.mlir_module_serialized == exported().mlir_module_serialized
    np.testing.assert_allclose(exp.call(X), expected(X), rtol=1e-6)


def test_str_is_short_and_names_the_function_as_jax_export_does() -> None:
    text = str(exported())
    assert text == "Exported(fun_name=softplus_sum, ...)"
    assert text == str(jax.export.export(jax.jit(softplus_sum))(SPEC))


def test_repr_shows_the_signature() -> None:
    text = repr(exported())
    assert "softplus_sum" in text
    assert "float32[2,3]" in text
    assert "float32[2]" in text


def test_mlir_module_is_the_text_of_main() -> None:
    text = exported().mlir_module()
    assert "func.func public @main(%arg0: tensor<2x3xf32>" in text
    assert "-> (tensor<2xf32>" in text
    assert "\nmodule @jit_softplus_sum attributes" in text  # after the #loc aliases, as JAX prints it


def test_the_exported_fields_describe_a_single_device_cpu_function() -> None:
    exp = exported()
    assert exp.fun_name == "softplus_sum"
    assert [a.shape for a in exp.in_avals] == [(2, 3)]
    assert [a.shape for a in exp.out_avals] == [(2,)]
    assert exp.nr_devices == 1
    assert exp.ordered_effects == ()
    assert exp.unordered_effects == ()
    assert exp.disabled_safety_checks == ()
    assert exp.calling_convention_version == 10
    assert exp.module_kept_var_idx == (0,)
    assert exp.uses_global_constants is False


def test_the_2023_field_names_read_the_current_fields() -> None:
    exp = exported()
    assert exp.mlir_module_serialization_version == exp.serialization_version == exp.calling_convention_version
    assert exp.uses_shape_polymorphism is exp.uses_global_constants


def test_the_calling_convention_window_is_public_as_in_jax_export() -> None:
    assert (jaxport.minimum_supported_calling_convention_version,
            jaxport.maximum_supported_calling_convention_version) == (
        jax.export.minimum_supported_calling_convention_version,
        jax.export.maximum_supported_calling_convention_version)
