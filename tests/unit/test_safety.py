"""DisabledSafetyCheck: construction, equality, wire form."""

from __future__ import annotations

import pytest

from jaxport.domain.artifact.safety import DisabledSafetyCheck, SafetyCheckKind


def test_each_kind_has_the_wire_form_jax_uses() -> None:
    assert str(DisabledSafetyCheck.platform()) == "platform"
    assert str(DisabledSafetyCheck.custom_call("my_target")) == "custom_call:my_target"
    assert str(DisabledSafetyCheck.shape_assertions()) == "shape_assertions"


def test_checks_compare_and_hash_by_value() -> None:
    a = DisabledSafetyCheck.custom_call("t")
    assert a == DisabledSafetyCheck.custom_call("t")
    assert a != DisabledSafetyCheck.custom_call("u")
    assert a != DisabledSafetyCheck.platform()
    assert len({a, DisabledSafetyCheck.custom_call("t"), DisabledSafetyCheck.platform()}) == 2


def test_is_custom_call_returns_the_target_only_for_custom_calls() -> None:
    assert DisabledSafetyCheck.custom_call("t").is_custom_call() == "t"
    assert DisabledSafetyCheck.platform().is_custom_call() is None
    assert DisabledSafetyCheck.shape_assertions().is_custom_call() is None


@pytest.mark.parametrize("check", [DisabledSafetyCheck.platform(), DisabledSafetyCheck.shape_assertions(),
                                   DisabledSafetyCheck.custom_call("lapack_x:y")])
def test_the_wire_form_parses_back(check: DisabledSafetyCheck) -> None:
    assert DisabledSafetyCheck.parse(str(check)) == check


@pytest.mark.parametrize("wire", ["", "custom_call:", "platforms", "CUSTOM_CALL:x"])
def test_unknown_wire_forms_are_refused(wire: str) -> None:
    with pytest.raises(ValueError, match="Unknown disabled safety check"):
        DisabledSafetyCheck.parse(wire)


def test_a_target_belongs_only_to_custom_call_checks() -> None:
    with pytest.raises(ValueError, match="only a custom_call check names a target"):
        DisabledSafetyCheck(SafetyCheckKind.PLATFORM, "x")
    with pytest.raises(ValueError, match="must not be empty"):
        DisabledSafetyCheck.custom_call("")
