"""What the converters write with operations of their own: JAX's elementwise kernels and StableHLO's newest operations.

JAX 0.12.1 lowers ``lax.fma`` to ``stablehlo.fma``, and, with its
forward-compatibility gate off (``jax_export_ignore_forward_compatibility``,
the default of a coming release), ``exp2`` and ``log2`` to ``stablehlo.exp2``
and ``stablehlo.log2`` and ``lax.lgamma``/``lax.digamma`` to custom calls of
its own kernels. The three operations are StableHLO 1.24's, newer than what
LiteRT's and IREE's StableHLO read; the kernels are JAX's runtime's. Every
runtime target (ONNX, LiteRT, IREE) gets them unfolded instead
(:mod:`jaxport.adapters.mlir.unfold`): ``fma`` as a multiply and an add,
``exp2``/``log2`` through ``exp``/``log`` and ln 2, ``lgamma``/``digamma`` as an
elementwise decomposition (StableHLO's own, the one of ``chlo.lgamma`` and
``chlo.digamma``), float16 and bfloat16 computed in float32 as XLA computes them
on CPU. The verifying child reports each of them with its dtype, and a
target's plan refuses one only for a dtype it has no form for (its
``unfolded_reason``: LiteRT has no float64 arithmetic, IREE's CPU backend no
float64 sine), naming the operation and the dtype, before anything is written
(:func:`jaxport.domain.targets.plan.refuse_unfolded`).
"""

from __future__ import annotations

#: JAX's elementwise kernels (custom-call targets, on CPU, CUDA and ROCm) -> the function each computes.
ELEMENTWISE_KERNELS: dict[str, str] = {
    f"{prefix}_{function}_ffi": function for prefix in ("cpu", "cu", "hip") for function in ("lgamma", "digamma")}

#: The StableHLO operations newer than the runtimes' StableHLO -> how they are unfolded.
NEWER_OPERATIONS: dict[str, str] = {
    "stablehlo.fma": "a multiply and an add",
    "stablehlo.exp2": "exp(x * ln 2)",
    "stablehlo.log2": "log(x) / ln 2",
}


def is_kernel(operation: str) -> bool:
    """Whether ``operation`` (as :func:`kernel_operation` names it) is one of JAX's elementwise kernels."""
    return operation.startswith("stablehlo.custom_call @")


def kernel_operation(target: str) -> str:
    """How messages name the custom call of an elementwise kernel.

    >>> kernel_operation("cpu_lgamma_ffi")
    'stablehlo.custom_call @cpu_lgamma_ffi (lgamma)'
    """
    return f"stablehlo.custom_call @{target} ({ELEMENTWISE_KERNELS[target]})"
