"""IREE's compiler through its adapter: what a target request resolves to (a probe compile each, about 0.1 s)."""

from __future__ import annotations

import pytest

from jaxport.adapters.iree import compiler as iree_compiler
from jaxport.errors import ConversionError
from tests.helpers.extras import requires_iree

pytestmark = requires_iree


def test_a_generic_x86_64_level_resolves_to_its_features_only() -> None:
    target = iree_compiler.resolve_target("x86-64-v3", "x86_64-linux-gnu")
    assert (target.cpu, target.arch, target.executable_format) == ("x86-64-v3", "x86_64", "embedded-elf-x86_64")
    assert {"avx2", "fma", "bmi2"} <= set(target.required_features)
    assert "avx512f" not in target.required_features


def test_an_arm_board_resolves_to_the_baseline_of_aarch64() -> None:
    target = iree_compiler.resolve_target("generic", "aarch64-linux-gnu")
    assert (target.cpu, target.triple, target.requested_triple) == (
        "generic", "aarch64-unknown-unknown-eabi-elf", "aarch64-linux-gnu")
    assert target.arch == "aarch64"


def test_this_machine_resolves_to_a_named_cpu() -> None:
    target = iree_compiler.resolve_target("host", None)
    assert target.requested_cpu == "host" and target.cpu not in ("", "host")
    assert target.requested_triple == "host" and target.triple


@pytest.mark.parametrize(("cpu", "triple", "message"), [
    ("nonsense", None, "IREE cannot compile for CPU 'nonsense' and triple 'host': Unknown CPU"),
    ("generic", "foo-bar-baz", "IREE cannot compile for CPU 'generic' and triple 'foo-bar-baz'"),
])
def test_a_target_iree_does_not_know_is_refused(cpu: str, triple: str | None, message: str) -> None:
    with pytest.raises(ConversionError, match=message):
        iree_compiler.resolve_target(cpu, triple)
