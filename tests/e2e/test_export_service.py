"""The export service wired with fake ports: policy and serialization go through the ports."""

from __future__ import annotations

from collections.abc import Iterable

import jax.numpy as jnp
import numpy as np
import pytest

from jaxport.adapters.mlir.bindings import export_target_version
from jaxport.adapters.jax.lowering.lower import JaxLowerer
from jaxport.application import wiring
from jaxport.adapters.jax.lowering.service import ExportService
from jaxport.domain.artifact.module_policy import OpKind, OpSite
from jaxport.domain.artifact.safety import DisabledSafetyCheck
from jaxport.errors import DisallowedCustomCallError


class FakeModuleInspector:
    """Reports a fixed list of operation sites, whatever the module."""

    def __init__(self, sites: list[OpSite]) -> None:
        self.sites_reported = sites
        self.modules_seen: list[object] = []

    def sites(self, module: object) -> Iterable[OpSite]:
        self.modules_seen.append(module)
        return self.sites_reported


class FakeModuleSerializer:
    """Records what it was asked to serialize and returns marker bytes."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, bool]] = []

    def serialize(self, module: object, *, target_version: str, uses_global_constants: bool) -> bytes:
        self.calls.append((target_version, uses_global_constants))
        return b"ML\xefR fake module"


def service(sites: list[OpSite]) -> tuple[ExportService, FakeModuleInspector, FakeModuleSerializer]:
    inspector, serializer = FakeModuleInspector(sites), FakeModuleSerializer()
    return ExportService(JaxLowerer(), inspector, serializer), inspector, serializer


def export(svc: ExportService, checks: tuple[DisabledSafetyCheck, ...] = ()) -> object:
    return svc.export(jnp.sin, platforms=("cpu", "tpu"), disabled_checks=checks,
                      args_specs=(np.zeros(3, np.float32),), kwargs_specs={})


def test_the_service_checks_what_the_inspector_reports_and_keeps_the_serializers_bytes() -> None:
    svc, inspector, serializer = service([OpSite(OpKind.CUSTOM_CALL, "Qr")])
    exp = export(svc)
    assert len(inspector.modules_seen) == 1
    # The module is serialized once, at export (as jax.export does).
    assert serializer.calls == [(export_target_version(), True)]  # two platforms: a platform index argument
    assert getattr(exp, "mlir_module_serialized") == b"ML\xefR fake module"
    assert getattr(exp, "record").mlir_module_serialized is getattr(exp, "mlir_module_serialized")
    assert len(serializer.calls) == 1


def test_a_disallowed_site_reported_by_the_inspector_stops_the_export() -> None:
    site = OpSite(OpKind.CUSTOM_CALL, "my_kernel", describe=lambda: "custom_call @my_kernel at x.py:1")
    svc, _, serializer = service([site])
    with pytest.raises(DisallowedCustomCallError, match="my_kernel at x.py:1"):
        export(svc)
    assert serializer.calls == []
    exp = export(svc, (DisabledSafetyCheck.custom_call("my_kernel"),))
    assert getattr(exp, "mlir_module_serialized") and len(serializer.calls) == 1


def test_the_default_service_runs_on_the_composition_roots_adapters() -> None:
    svc = wiring.export_service()
    assert svc.lowerer is wiring.lowerer() and svc.inspector is wiring.module_inspector()
    assert svc.serializer is wiring.module_serializer()
