"""End to end: exporting for several platforms and calling on the CPU.

The functions use ``lax.platform_dependent`` so that each platform computes
something different: a result is only right if the platform index that
reaches the exported module selects the CPU branch.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import jaxport
from jaxport.errors import PlatformMismatchError

SPEC = jax.ShapeDtypeStruct((3,), jnp.float32)
X = np.array([0.5, -1.0, 2.0], np.float32)
MAIN_WITH_PLATFORM_INDEX = re.compile(
    r"func\.func public @main\(%arg0: tensor<i32> \{jax\.global_constant = \"_platform_index\"\}(?: loc\([^)]*\))?, "
    r"%arg1: tensor<3xf32>")


def per_platform(x: Any) -> Any:
    """``sin(x)`` plus 1 on cpu, 2 on cuda, 3 on tpu."""
    return lax.platform_dependent(
        x, cpu=lambda v: jnp.sin(v) + 1.0, cuda=lambda v: jnp.sin(v) + 2.0,
        tpu=lambda v: jnp.sin(v) + 3.0)


def on_cpu(x: np.ndarray) -> np.ndarray:
    return np.asarray(np.sin(x) + np.float32(1.0), np.float32)


@functools.cache
def exported_for(platforms: tuple[str, ...]) -> jaxport.Exported:
    return jaxport.export(jax.jit(per_platform), platforms=platforms)(SPEC)


@pytest.mark.parametrize("platforms", [("cpu", "tpu", "cuda"), ("tpu", "cuda", "cpu")])
def test_a_function_exported_for_three_platforms_runs_on_the_cpu(platforms: tuple[str, ...]) -> None:
    exp = exported_for(platforms)
    assert exp.platforms == platforms
    np.testing.assert_allclose(exp.call(X), on_cpu(X), rtol=1e-6)
    np.testing.assert_allclose(jax.jit(exp.call)(X), on_cpu(X), rtol=1e-6)


def test_main_takes_the_platform_index_first_when_there_are_several_platforms() -> None:
    exp = exported_for(("cpu", "tpu", "cuda"))
    assert MAIN_WITH_PLATFORM_INDEX.search(exp.mlir_module()) is not None
    assert exp.uses_global_constants is True
    assert exp.module_kept_var_idx == (0,)
    assert len(exp.in_avals) == 1


def test_main_has_no_platform_index_for_a_single_platform() -> None:
    exp = exported_for(("cpu",))
    assert MAIN_WITH_PLATFORM_INDEX.search(exp.mlir_module()) is None
    assert "@main(%arg0: tensor<3xf32>" in exp.mlir_module()
    assert exp.uses_global_constants is False


def test_a_multiplatform_module_is_byte_identical_to_jax_export() -> None:
    platforms = ("cpu", "tpu", "cuda")
    theirs = jax.export.export(jax.jit(per_platform), platforms=platforms)(SPEC)
    ours = exported_for(platforms)
    assert ours.platforms == theirs.platforms
    assert ours.uses_global_constants == theirs.uses_global_constants
    assert ours.mlir_module_serialized == theirs.mlir_module_serialized


# --------------------------------------------------------------------------
# The platform check
# --------------------------------------------------------------------------


def test_a_tpu_only_function_is_refused_on_the_cpu_eagerly() -> None:
    exp = exported_for(("tpu",))
    with pytest.raises(PlatformMismatchError,
                       match=r"exported for platforms '\('tpu',\)' but it is used on '\('cpu',\)'"):
        exp.call(X)


def test_a_tpu_only_function_is_refused_on_the_cpu_under_jit() -> None:
    exp = exported_for(("tpu",))
    with pytest.raises(PlatformMismatchError, match=r"'\('tpu',\)'.*'\('cpu',\)'"):
        jax.jit(exp.call)(X)


def test_the_platform_error_is_a_value_error_that_says_how_to_run_anyway() -> None:
    with pytest.raises(ValueError, match=r"DisabledSafetyCheck\.platform\(\)"):
        exported_for(("tpu",)).call(X)


def test_a_tpu_only_function_runs_on_the_cpu_after_disabling_the_platform_check() -> None:
    check = jaxport.DisabledSafetyCheck.platform()
    exp = jaxport.export(jax.jit(lambda x: jnp.cos(x) * 3.0), platforms=("tpu",),
                         disabled_checks=[check])(SPEC)
    assert exp.disabled_safety_checks == (check,)
    expected = np.cos(X) * np.float32(3.0)
    np.testing.assert_allclose(exp.call(X), expected, rtol=1e-6)
    np.testing.assert_allclose(jax.jit(exp.call)(X), expected, rtol=1e-6)


# --------------------------------------------------------------------------
# Calling an exported function from a function being exported
# --------------------------------------------------------------------------


def test_a_caller_exported_for_a_platform_its_callee_lacks_is_refused() -> None:
    callee = exported_for(("cpu", "cuda"))
    caller = jax.jit(lambda x: callee.call(x) * 2.0)
    with pytest.raises(PlatformMismatchError,
                       match=r"exported for platforms '\('cpu', 'cuda'\)' "
                             r"but it is used on '\('cpu', 'tpu'\)'"):
        jaxport.export(caller, platforms=("cpu", "tpu"))(SPEC)


@pytest.mark.parametrize("caller_platforms", [("cpu", "cuda"), ("cuda", "cpu")])
def test_a_multiplatform_caller_of_a_multiplatform_callee_runs_on_the_cpu(
        caller_platforms: tuple[str, ...]) -> None:
    callee = exported_for(("tpu", "cuda", "cpu"))
    caller = jaxport.export(jax.jit(lambda x: callee.call(x) * 10.0), platforms=caller_platforms)(SPEC)
    assert caller.platforms == caller_platforms
    assert caller.uses_global_constants is True
    assert MAIN_WITH_PLATFORM_INDEX.search(caller.mlir_module()) is not None
    expected = on_cpu(X) * np.float32(10.0)
    np.testing.assert_allclose(caller.call(X), expected, rtol=1e-6)
    np.testing.assert_allclose(jax.jit(caller.call)(X), expected, rtol=1e-6)


def test_a_single_platform_caller_of_a_multiplatform_callee_runs_on_the_cpu() -> None:
    callee = exported_for(("tpu", "cuda", "cpu"))
    caller = jaxport.export(jax.jit(lambda x: callee.call(x) - 1.0))(SPEC)
    assert caller.platforms == ("cpu",)
    np.testing.assert_allclose(caller.call(X), np.sin(X), rtol=1e-6, atol=1e-7)


# --------------------------------------------------------------------------
# The 2023 name of platforms=
# --------------------------------------------------------------------------


def test_lowering_platforms_is_the_2023_name_of_platforms() -> None:
    exp = jaxport.export(jax.jit(per_platform), lowering_platforms=("cpu", "tpu"))(SPEC)
    assert exp.platforms == ("cpu", "tpu")
    assert exp.lowering_platforms == ("cpu", "tpu")
    assert MAIN_WITH_PLATFORM_INDEX.search(exp.mlir_module()) is not None
    np.testing.assert_allclose(exp.call(X), on_cpu(X), rtol=1e-6)


def test_platforms_and_lowering_platforms_together_are_refused() -> None:
    with pytest.raises(ValueError, match="not both"):
        jaxport.export(per_platform, platforms=("cpu",), lowering_platforms=("cpu",))
