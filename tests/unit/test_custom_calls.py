"""The allowlist of custom-call targets, as data."""

from __future__ import annotations

from jaxport.domain.artifact import custom_calls


def test_the_allowlist_has_the_94_targets_of_jax_0_12_1() -> None:
    assert len(custom_calls.GUARANTEED_STABLE_TARGETS) == 94
    assert len(custom_calls.CPU_LAPACK_TARGETS) == 48


def test_the_six_special_function_targets_are_dated_jax_0_12_1() -> None:
    assert custom_calls.TARGETS_SINCE == {t: "0.12.1" for t in (
        "cpu_digamma_ffi", "cpu_lgamma_ffi", "cu_digamma_ffi", "cu_lgamma_ffi", "hip_digamma_ffi", "hip_lgamma_ffi")}
    assert set(custom_calls.TARGETS_SINCE) <= custom_calls.GUARANTEED_STABLE_TARGETS


def test_lapack_targets_use_lapack_names_for_complex_routines() -> None:
    for name in ("lapack_spotrf_ffi", "lapack_zpotrf_ffi", "lapack_cungqr_ffi",
                 "lapack_zheevd_ffi", "lapack_chetrd_ffi", "lapack_dgtsv_ffi", "lapack_sorgqr_ffi"):
        assert name in custom_calls.CPU_LAPACK_TARGETS
    assert "lapack_corgqr_ffi" not in custom_calls.CPU_LAPACK_TARGETS


def test_triton_is_not_guaranteed_stable_but_shape_assertion_is() -> None:
    assert "__gpu$xla.gpu.triton" not in custom_calls.GUARANTEED_STABLE_TARGETS
    assert "shape_assertion" in custom_calls.GUARANTEED_STABLE_TARGETS


def test_extra_targets_extend_the_allowlist() -> None:
    allowed = custom_calls.allowed_targets(["my_kernel"])
    assert "my_kernel" in allowed and "Qr" in allowed
