"""The export service wired with fake ports: policy and serialization go through the ports."""

from __future__ import annotations

from collections.abc import Iterable

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport
from jaxport.adapters.jax.lowering.lower import JaxLowerer
from jaxport.application import wiring
from jaxport.adapters.jax.lowering.service import ExportService
from jaxport.domain.artifact.module_policy import OpKind, OpSite
from jaxport.domain.artifact.safety import DisabledSafetyCheck
from jaxport.domain.ports import LoweredModule
from jaxport.domain.symbolic import ArgDim, ShapePlan
from jaxport.errors import DisallowedCustomCallError


class FakeStableHlo:
    """Reports a fixed list of operation sites, whatever the module; records what it was asked to
    wrap and serialize, and serializes to marker bytes. It reads no artifact."""

    def __init__(self, sites: list[OpSite]) -> None:
        self.sites_reported = sites
        self.modules_seen: list[LoweredModule] = []
        self.plans: list[tuple[ShapePlan, tuple[str, ...], tuple[ArgDim, ...]]] = []
        self.calls: list[tuple[str, bool]] = []

    def sites(self, module: LoweredModule) -> Iterable[OpSite]:
        self.modules_seen.append(module)
        return self.sites_reported

    def op_names(self, module: LoweredModule) -> list[str]:
        raise AssertionError("the export service counts no operations")

    def wrap_main(self, module: LoweredModule, *, plan: ShapePlan, dim_vars: tuple[str, ...],
                  has_platform_index: bool, nr_tokens: int, kept_var_idx: tuple[int, ...],
                  shape_assertions: bool, symbolic_dims: tuple[ArgDim, ...] = ()) -> LoweredModule:
        self.plans.append((plan, dim_vars, symbolic_dims))
        return module

    def serialize(self, module: LoweredModule, *, target_version: str, uses_global_constants: bool) -> bytes:
        self.calls.append((target_version, uses_global_constants))
        return b"ML\xefR fake module"

    def deserialize(self, blob: bytes) -> LoweredModule:
        raise AssertionError("the export service reads no artifact")

    def export_target_version(self) -> str:
        return "1.2.3"

    def newest_readable_version(self) -> str:
        return "9.9.9"

    def parser_version(self) -> str:
        return "fake"


def service(sites: list[OpSite]) -> tuple[ExportService, FakeStableHlo]:
    stablehlo = FakeStableHlo(sites)
    return ExportService(JaxLowerer(), stablehlo), stablehlo


def export(svc: ExportService, checks: tuple[DisabledSafetyCheck, ...] = ()) -> object:
    return svc.export(jnp.sin, platforms=("cpu", "tpu"), disabled_checks=checks,
                      args_specs=(np.zeros(3, np.float32),), kwargs_specs={})


def test_the_service_checks_what_the_port_reports_and_keeps_the_bytes_it_serializes() -> None:
    svc, stablehlo = service([OpSite(OpKind.CUSTOM_CALL, "Qr")])
    exp = export(svc)
    assert len(stablehlo.modules_seen) == 1 and stablehlo.plans == []
    # The module is serialized once, at export (as jax.export does).
    assert stablehlo.calls == [("1.2.3", True)]  # the port's version; two platforms: a platform index argument
    assert getattr(exp, "mlir_module_serialized") == b"ML\xefR fake module"
    assert getattr(exp, "record").mlir_module_serialized is getattr(exp, "mlir_module_serialized")
    assert len(stablehlo.calls) == 1


def test_a_disallowed_site_reported_by_the_port_stops_the_export() -> None:
    site = OpSite(OpKind.CUSTOM_CALL, "my_kernel", describe=lambda: "custom_call @my_kernel at x.py:1")
    svc, stablehlo = service([site])
    with pytest.raises(DisallowedCustomCallError, match="my_kernel at x.py:1"):
        export(svc)
    assert stablehlo.calls == []
    exp = export(svc, (DisabledSafetyCheck.custom_call("my_kernel"),))
    assert getattr(exp, "mlir_module_serialized") and len(stablehlo.calls) == 1


def test_a_symbolic_export_has_the_port_wrap_main_from_the_domains_plan() -> None:
    svc, stablehlo = service([])
    b, = jaxport.symbolic_shape("b")
    svc.export(jnp.sin, platforms=("cpu",), disabled_checks=(),
               args_specs=(jax.ShapeDtypeStruct((b, 3), jnp.float32),), kwargs_specs={})
    (plan, dim_vars, symbolic_dims), = stablehlo.plans
    assert isinstance(plan, ShapePlan) and dim_vars == ("b",) and symbolic_dims == (ArgDim(0, 0),)


def test_the_default_service_runs_on_the_composition_roots_adapters() -> None:
    svc = wiring.export_service()
    assert svc.lowerer is wiring.lowerer() and svc.stablehlo is wiring.stablehlo()
