"""Platform names and the choice of the exported branch."""

from __future__ import annotations

import pytest

from jaxport.domain.errors import PlatformMismatchError
from jaxport.domain.artifact.platforms import callee_platform_indices, normalize_platforms
from jaxport.domain.artifact.safety import DisabledSafetyCheck


def test_platform_names_are_normalized() -> None:
    assert normalize_platforms(["CPU", "gpu", "tpu"]) == ("cpu", "cuda", "tpu")


@pytest.mark.parametrize("bad, message", [(["cpu", "CPU"], "more than once"), ([], "at least one"),
                                          ([""], "empty platform")])
def test_bad_platform_lists_are_refused(bad: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        normalize_platforms(bad)


def test_each_caller_platform_maps_to_its_exported_branch() -> None:
    assert callee_platform_indices("f", ("tpu", "cpu", "cuda"), ("cpu", "cuda"), ()) == (1, 2)


def test_a_missing_platform_is_refused_naming_both() -> None:
    with pytest.raises(PlatformMismatchError, match=r"exported for platforms '\('tpu',\)' but it is used on '\('cpu',\)'"):
        callee_platform_indices("f", ("tpu",), ("cpu",), ())


def test_disabling_the_platform_check_runs_the_first_branch() -> None:
    assert callee_platform_indices("f", ("tpu", "cuda"), ("cpu",), (DisabledSafetyCheck.platform(),)) == (0,)
