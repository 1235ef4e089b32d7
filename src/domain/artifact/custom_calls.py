"""Custom-call targets whose compatibility JAX guarantees (0.12.1's list), and since when.

Custom calls are outside StableHLO's compatibility promise, so an export may
only use targets on this list unless the user disables the check for a target
(``DisabledSafetyCheck.custom_call``). The list is the set that JAX tests
for backward compatibility (``export_back_compat_test``): JAX 0.10.2's 88
targets, and the six lgamma and digamma targets that JAX 0.12.1 added
(:data:`TARGETS_SINCE`), which an older JAX's jaxlib does not register.
"""

from __future__ import annotations

from collections.abc import Iterable

_LAPACK_ROUTINES = ("potrf", "geqrf", "orgqr", "syevd", "geev", "gesdd", "getrf",
                    "sytrd", "gehrd", "gees", "trsm", "gtsv")
# LAPACK spells the complex variants of a few routines differently.
_COMPLEX_NAMES = {"orgqr": "ungqr", "syevd": "heevd", "sytrd": "hetrd"}


CPU_LAPACK_TARGETS: frozenset[str] = frozenset(
    f"lapack_{prefix}{_COMPLEX_NAMES.get(routine, routine) if prefix in 'cz' else routine}_ffi"
    for routine in _LAPACK_ROUTINES for prefix in "sdcz")

GPU_SOLVER_TARGETS: frozenset[str] = frozenset({
    "cu_lu_pivots_to_permutation", "cusolver_getrf_ffi",
    "hip_lu_pivots_to_permutation", "hipsolver_getrf_ffi",
    "cusolver_geqrf_ffi", "cusolver_orgqr_ffi",
    "hipsolver_geqrf_ffi", "hipsolver_orgqr_ffi",
    "cusolver_potrf_ffi", "hipsolver_potrf_ffi",
    "cusolver_syevd_ffi", "hipsolver_syevd_ffi",
    "cusolver_gesvd_ffi", "cusolver_gesvdj_ffi",
    "hipsolver_gesvd_ffi", "hipsolver_gesvdj_ffi", "hipsolver_gesdd_ffi",
    "cusolver_sytrd_ffi", "hipsolver_sytrd_ffi",
    "cusparse_gtsv2_ffi",
})

OTHER_STABLE_TARGETS: frozenset[str] = frozenset({
    "Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape",
    "annotate_device_placement",
    "cu_threefry2x32_ffi", "hip_threefry2x32_ffi",
    "Eigh", "Qr", "ProductOfElementaryHouseholderReflectors", "LuDecomposition",
    "ApproxTopK", "stablehlo.dynamic_approx_top_k",
    "tf.call_tf_function", "tpu_custom_call", "AllocateBuffer", "mosaic_gpu_v2",
    "stablehlo.dynamic_reduce_window", "stablehlo.dynamic_rng_bit_generator",
    "stablehlo.dynamic_top_k",
    "shape_assertion",
})

#: The special functions that JAX 0.12.1 lowers to custom calls on CPU, CUDA and ROCm.
SPECIAL_FUNCTION_TARGETS: frozenset[str] = frozenset(
    f"{prefix}_{function}_ffi" for prefix in ("cpu", "cu", "hip") for function in ("lgamma", "digamma"))

#: The JAX release whose allowlist first holds a target, for the targets added after JAX 0.10.2
#: (``_CUSTOM_CALL_TARGETS_GUARANTEED_STABLE`` in ``jax/_src/export/_export.py``); an older JAX
#: cannot run a module that calls one.
TARGETS_SINCE: dict[str, str] = {target: "0.12.1" for target in sorted(SPECIAL_FUNCTION_TARGETS)}

#: Every target that needs no ``DisabledSafetyCheck`` to be exported.
GUARANTEED_STABLE_TARGETS: frozenset[str] = (
    CPU_LAPACK_TARGETS | GPU_SOLVER_TARGETS | OTHER_STABLE_TARGETS | SPECIAL_FUNCTION_TARGETS)

#: The pseudo-target that allows every custom call.
ALLOW_ALL = "ALL"

#: Targets of host callbacks: they call back into the exporting Python process.
HOST_CALLBACK_TARGETS: frozenset[str] = frozenset({
    "xla_python_cpu_callback", "xla_ffi_python_cpu_callback",
    "xla_python_gpu_callback", "xla_ffi_python_gpu_callback",
    "xla_ffi_partitioned_python_cpu_callback", "xla_ffi_partitioned_python_gpu_callback",
})


def allowed_targets(extra: Iterable[str]) -> frozenset[str]:
    """The guaranteed-stable targets plus ``extra`` (from disabled checks)."""
    return GUARANTEED_STABLE_TARGETS | frozenset(extra)
