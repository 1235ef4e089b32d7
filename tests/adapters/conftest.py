"""Fixtures of the adapter tests, and JAX's set-up (:func:`~tests.helpers.jax_setup.configure_jax`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from jaxport.adapters.flatbuffers.reader import WireReader
from tests.helpers.artifacts import recorded_readers
from tests.helpers.jax_setup import configure_jax

configure_jax()


@pytest.fixture
def readers() -> Iterator[list[WireReader]]:
    """The wire readers that decoding creates during the test, in order (see :func:`recorded_readers`)."""
    with recorded_readers() as made:
        yield made
