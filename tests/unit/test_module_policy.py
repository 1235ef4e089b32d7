"""The export policy over the IR port, with hand-made operation sites."""

from __future__ import annotations

import pytest

from jaxport.domain.errors import DisallowedCustomCallError, HostCallbackError
from jaxport.domain.artifact.module_policy import ModulePolicy, OpKind, OpSite
from jaxport.domain.artifact.safety import DisabledSafetyCheck
from jaxport.domain.jax_docs import DocPages


def call(target: str, where: str = "loc(x.py:1)") -> OpSite:
    return OpSite(OpKind.CUSTOM_CALL, target, describe=lambda: f"custom_call @{target} at {where}")


def test_allowlisted_targets_pass() -> None:
    ModulePolicy.for_export(()).check("f", [call("lapack_spotrf_ffi"), call("Qr")], DocPages())


def test_each_disallowed_call_is_listed_with_its_location() -> None:
    policy = ModulePolicy.for_export(())
    with pytest.raises(DisallowedCustomCallError) as info:
        policy.check("f", [call("k1", "a.py:3"), call("Qr"), call("k2", "b.py:7")], DocPages())
    assert info.value.offenders == ("custom_call @k1 at a.py:3", "custom_call @k2 at b.py:7")
    assert "no compatibility guarantees" in str(info.value)
    assert "custom_call @k2 at b.py:7" in str(info.value)


def test_disabling_the_check_for_a_target_allows_only_that_target() -> None:
    policy = ModulePolicy.for_export([DisabledSafetyCheck.custom_call("k1")])
    policy.check("f", [call("k1")], DocPages())
    with pytest.raises(DisallowedCustomCallError, match="k2"):
        policy.check("f", [call("k1"), call("k2")], DocPages())


def test_all_allows_every_target() -> None:
    policy = ModulePolicy.for_export([DisabledSafetyCheck.custom_call("ALL")])
    policy.check("f", [call("anything")], DocPages())


def test_host_callbacks_are_refused_even_when_all_targets_are_allowed() -> None:
    policy = ModulePolicy.for_export([DisabledSafetyCheck.custom_call("ALL")])
    with pytest.raises(HostCallbackError, match="host_callbacks is not yet implemented"):
        policy.check("f", [call("xla_ffi_python_cpu_callback")], DocPages())


def test_sharding_annotations_are_not_refused_as_in_jax_export() -> None:
    assert set(OpKind) == {OpKind.CUSTOM_CALL}  # the policy looks at nothing else


def test_the_walk_is_consumed_once_and_lazily_described() -> None:
    described: list[str] = []

    def describe() -> str:
        described.append("called")
        return "x"

    def site(i: int) -> OpSite:
        return OpSite(OpKind.CUSTOM_CALL, "Qr", describe=describe)

    ModulePolicy.for_export(()).check("f", (site(i) for i in range(10_000)), DocPages())
    assert described == []
