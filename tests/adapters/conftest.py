"""Fixtures of the adapter tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh jaxport cache directory of this test, set as ``JAXPORT_CACHE_DIR``."""
    root = tmp_path / "cache"
    monkeypatch.setenv("JAXPORT_CACHE_DIR", str(root))
    return root
