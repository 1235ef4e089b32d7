"""Fixtures that several end-to-end modules share."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def serve_directories(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The serving tests' bundle with golden examples and its IREE directory (made once per session)."""
    from tests.helpers.serving import make_directories

    return make_directories(tmp_path_factory.mktemp("serve"))
