"""What a module may contain to be exported: the policy over the IR port.

The adapter walks the module once and reports only the operations that the
policy cares about, as :class:`OpSite` values; the decisions are made here.

Custom calls are outside StableHLO's compatibility promise, so an export may
only use the targets whose compatibility JAX 0.10.2 guarantees
(:data:`GUARANTEED_STABLE_TARGETS`) unless the user disables the check for a
target (``DisabledSafetyCheck.custom_call``). The list is the set that JAX
tests for backward compatibility (``export_back_compat_test``).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from jaxport.domain.errors import DisallowedCustomCallError, HostCallbackError
from .safety import DisabledSafetyCheck

_LAPACK_ROUTINES = ("potrf", "geqrf", "orgqr", "syevd", "geev", "gesdd", "getrf",
                    "sytrd", "gehrd", "gees", "trsm", "gtsv")
# LAPACK spells the complex variants of a few routines differently.
_COMPLEX_NAMES = {"orgqr": "ungqr", "syevd": "heevd", "sytrd": "hetrd"}


def _lapack_targets() -> frozenset[str]:
    names = set()
    for routine in _LAPACK_ROUTINES:
        for prefix in "sdcz":
            name = _COMPLEX_NAMES.get(routine, routine) if prefix in "cz" else routine
            names.add(f"lapack_{prefix}{name}_ffi")
    return frozenset(names)


CPU_LAPACK_TARGETS: frozenset[str] = _lapack_targets()

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

#: Every target that needs no ``DisabledSafetyCheck`` to be exported.
GUARANTEED_STABLE_TARGETS: frozenset[str] = (
    CPU_LAPACK_TARGETS | GPU_SOLVER_TARGETS | OTHER_STABLE_TARGETS)

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


class OpKind(enum.Enum):
    """The operations the export policy looks at."""

    CUSTOM_CALL = "stablehlo.custom_call"


@dataclass(frozen=True, slots=True)
class OpSite:
    """One operation of a module, as the policy sees it.

    Attributes:
        kind: what the operation is.
        target: the custom-call target, for custom calls.
        describe: builds the operation's text and location for error messages;
            called only for operations that are reported.
    """

    kind: OpKind
    target: str | None = None
    describe: Callable[[], str] = lambda: "<operation>"


@dataclass(frozen=True, slots=True)
class ModulePolicy:
    """Which custom calls an export accepts.

    Sharding annotations are all accepted, as ``jax.export`` accepts them:
    also non-replicated ones inside a function jitted without in or out
    shardings (the call then runs on as many devices as the module names).

    Attributes:
        allowed_custom_calls: targets that may appear.
    """

    allowed_custom_calls: frozenset[str]

    @staticmethod
    def for_export(disabled: Sequence[DisabledSafetyCheck]) -> ModulePolicy:
        """The policy for an export with these disabled checks."""
        extra = (c.target for c in disabled if c.target is not None)
        return ModulePolicy(allowed_targets(extra))

    def allows(self, target: str) -> bool:
        """Whether a custom call to ``target`` may be exported."""
        return ALLOW_ALL in self.allowed_custom_calls or target in self.allowed_custom_calls

    def check(self, fun_name: str, sites: Iterable[OpSite]) -> None:
        """Checks every reported operation of the module of ``fun_name``.

        Raises:
            HostCallbackError: the module calls back into Python.
            DisallowedCustomCallError: it calls targets that are not allowed;
                every offending operation is listed with its location.
        """
        disallowed: list[str] = []
        for site in sites:
            if site.kind is OpKind.CUSTOM_CALL and site.target is not None:
                if site.target in HOST_CALLBACK_TARGETS:
                    raise HostCallbackError(fun_name)
                if not self.allows(site.target):
                    disallowed.append(site.describe())
        if disallowed:
            raise DisallowedCustomCallError(disallowed)
