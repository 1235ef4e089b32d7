"""JAX's set-up for the end-to-end tests, and the ``jax_compilation_cache`` fixture."""

from __future__ import annotations

from tests.helpers.jax_setup import configure_jax
from tests.helpers.jax_setup import jax_compilation_cache as jax_compilation_cache

configure_jax()
