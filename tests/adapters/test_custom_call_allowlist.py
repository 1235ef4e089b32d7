"""jaxport's allowlist of custom-call targets against the installed JAX's own."""

from __future__ import annotations

import jax
from jax._src.export import _export  # the peer's list, read by the test only

from jaxport.domain.artifact import custom_calls
from jaxport.domain.artifact.producer import release_key


def test_the_allowlist_is_jax_s_plus_the_targets_of_later_releases() -> None:
    theirs = frozenset(_export._CUSTOM_CALL_TARGETS_GUARANTEED_STABLE)
    later = {t for t, since in custom_calls.TARGETS_SINCE.items()
             if release_key(since) > release_key(jax.__version__)}
    assert custom_calls.GUARANTEED_STABLE_TARGETS - later == theirs
