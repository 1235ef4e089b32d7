"""Executables saved as plain bytes and loaded back behave as freshly compiled ones."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from jaxport.adapters.xla_executables import XlaExecutables


def _reloaded(jitted: object, *args: object) -> tuple[jax.stages.Compiled, jax.stages.Compiled]:
    executables = XlaExecutables()
    lowered = executables.lower(jitted, args, {})  # type: ignore[arg-type]
    compiled, payload = executables.compile(lowered)
    assert isinstance(payload, bytes) and payload
    return compiled, executables.load(executables.lower(jitted, args, {}), payload)  # type: ignore[arg-type]


def test_a_reloaded_executable_keeps_results_and_shardings() -> None:
    mesh = jax.make_mesh((8,), ("a",))
    x = jax.device_put(jnp.arange(64.0).reshape(16, 4), NamedSharding(mesh, P("a")))
    compiled, reloaded = _reloaded(jax.jit(lambda x, unused: (x * 2, x.sum())), x, jnp.ones(3))
    want, got = compiled(x, jnp.ones(3)), reloaded(x, jnp.ones(3))
    for w, g in zip(want, got):
        np.testing.assert_array_equal(np.asarray(w), np.asarray(g))
        assert w.sharding == g.sharding


def test_a_reloaded_executable_keeps_donation() -> None:
    _, reloaded = _reloaded(jax.jit(lambda x: x + 1, donate_argnums=0), jnp.ones(4))
    x = jnp.ones(4)
    np.testing.assert_array_equal(np.asarray(reloaded(x)), np.full(4, 2.0))
    assert x.is_deleted()


def _sin_here(x: jax.Array) -> jax.Array:
    return jnp.sin(x)


def _sin_there(x: jax.Array) -> jax.Array:

    return jnp.sin(x)  # the same program, created on another line


def test_the_program_digest_ignores_source_locations() -> None:
    executables = XlaExecutables()
    _sin_there.__name__ = _sin_here.__name__
    here = executables.lower(jax.jit(_sin_here), (jnp.ones(3),), {})
    there = executables.lower(jax.jit(_sin_there), (jnp.ones(3),), {})
    assert here.as_text(debug_info=True) != there.as_text(debug_info=True)
    assert executables.program_digest(here) == executables.program_digest(there)
    other = executables.lower(jax.jit(_sin_here), (jnp.ones(4),), {})
    assert executables.program_digest(other) != executables.program_digest(here)
