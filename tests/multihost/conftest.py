"""JAX's set-up for the tests of tests/multihost (see :mod:`tests.helpers.jax_setup`)."""

from __future__ import annotations

from tests.helpers.jax_setup import configure_jax

configure_jax()
