"""Each runtime target's plan on the operations every converter unfolds (:mod:`jaxport.domain.targets.unfolded`)."""

from __future__ import annotations

import pytest

from jaxport.domain.errors import UnsupportedOperationError
from jaxport.domain.targets import iree, litert, onnx
from jaxport.domain.targets.plan import TargetPlan, refuse_custom_calls, refuse_unfolded
from jaxport.domain.targets.unfolded import ELEMENTWISE_KERNELS, kernel_operation

FMA = ("stablehlo.fma", "float64", 'loc("jit(f)/fma")')
LGAMMA = (kernel_operation("cpu_lgamma_ffi"), "float64", 'loc("jit(f)/lgamma")')


@pytest.mark.parametrize("plan", [onnx.PLAN, litert.PLAN, iree.PLAN], ids=lambda p: p.runtime)
def test_every_runtime_target_runs_jaxs_lgamma_and_digamma_kernels_and_every_float_but_float64(
        plan: TargetPlan) -> None:
    refuse_custom_calls(plan, "f", sorted(ELEMENTWISE_KERNELS))
    for dtype in ("float16", "bfloat16", "float32"):
        refuse_unfolded(plan, "f", [(FMA[0], dtype, FMA[2]), (LGAMMA[0], dtype, LGAMMA[2])])


@pytest.mark.parametrize("plan, refused, kept", [
    (onnx.PLAN, None, [FMA, LGAMMA]),
    (litert.PLAN, FMA, []),
    (iree.PLAN, LGAMMA, [FMA]),
], ids=["ONNX", "LiteRT", "IREE"])
def test_float64_is_refused_only_where_the_target_has_no_form_naming_the_operation_and_where_it_is(
        plan: TargetPlan, refused: tuple[str, str, str] | None, kept: list[tuple[str, str, str]]) -> None:
    refuse_unfolded(plan, "f", kept)
    if refused is None:
        return
    with pytest.raises(UnsupportedOperationError) as raised:
        refuse_unfolded(plan, "f", [*kept, refused])
    assert (raised.value.operation, raised.value.location) == (refused[0], refused[2])
    assert f"{plan.runtime} has no float64 form of it" in str(raised.value) and "'f'" in str(raised.value)
