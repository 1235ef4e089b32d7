"""Fixtures of the adapter tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from jaxport.adapters.flatbuffers_reader import WireReader
from tests.helpers.artifacts import recorded_readers


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh jaxport cache directory of this test, set as ``JAXPORT_CACHE_DIR``."""
    root = tmp_path / "cache"
    monkeypatch.setenv("JAXPORT_CACHE_DIR", str(root))
    return root


@pytest.fixture
def readers() -> Iterator[list[WireReader]]:
    """The wire readers that decoding creates during the test, in order (see :func:`recorded_readers`)."""
    with recorded_readers() as made:
        yield made
