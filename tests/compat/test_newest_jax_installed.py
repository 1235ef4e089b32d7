"""``make test-newest-jax``'s report (tests/helpers/newest_jax.py) on the JAX installed here, of the tested range:
nothing outside the range, every module of jaxport's JAX adapter imports, and each allowlist entry it reports
is one that jax.export guarantees and jaxport does not, or the other way."""

from __future__ import annotations

from jax._src.export import _export

from jaxport.domain.artifact.custom_calls import GUARANTEED_STABLE_TARGETS
from tests.helpers.newest_jax import allowlist_differences, internal_differences, range_differences


def test_the_installed_jax_is_of_the_range_and_no_internal_moved() -> None:
    assert list(range_differences()) == []
    assert list(internal_differences()) == []


def test_each_allowlist_entry_reported_is_in_one_list_only() -> None:
    theirs = set(_export._CUSTOM_CALL_TARGETS_GUARANTEED_STABLE)
    reported = {d.text.partition(":")[0] for d in allowlist_differences()}
    assert reported == theirs ^ GUARANTEED_STABLE_TARGETS
