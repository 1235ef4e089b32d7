"""The calling-convention window and the layout of main's arguments."""

from __future__ import annotations

import pytest

from jaxport.domain.artifact import calling_convention as cc
from jaxport.domain.errors import CallingConventionError


def test_the_window_is_jax_0_10_2s() -> None:
    assert (cc.MINIMUM_VERSION, cc.MAXIMUM_VERSION) == (9, 10)


@pytest.mark.parametrize("version", [8, 11])
def test_versions_outside_the_window_name_found_and_supported(version: int) -> None:
    with pytest.raises(CallingConventionError, match=rf"version {version} is outside the range of supported versions \[9\.\.10\]"):
        cc.check_version(version, when="deserialized")


def test_main_takes_platform_index_then_tokens_then_kept_arrays() -> None:
    layout = cc.MainArguments.for_export(nr_platforms=3, nr_ordered_effects=2, kept_var_idx=(0, 2))
    assert layout.has_platform_index and layout.first_array == 3 and len(layout) == 5
    single = cc.MainArguments.for_export(nr_platforms=1, nr_ordered_effects=0, kept_var_idx=(0,))
    assert not single.has_platform_index and single.first_array == 0 and len(single) == 1
