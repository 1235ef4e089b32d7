"""The runtime-only run: ``make test-runtime-only`` runs this folder in a virtual environment holding
jaxport's runtime extras only (``onnx-runtime``, ``litert-runtime``, ``iree-runtime``, ``serve``; no
JAX), on the directories that ``python -m tests.helpers.runtime_only_fixtures ROOT`` wrote with the
main virtual environment; ``JAXPORT_RUNTIME_ONLY_FIXTURES=ROOT`` names them. Without it (the main
suite) the folder's tests are skipped.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers.extras import skip_folder_unless

ENV = "JAXPORT_RUNTIME_ONLY_FIXTURES"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip_folder_unless(ENV, "the runtime-only run (make test-runtime-only)", Path(__file__).parent, items)


@pytest.fixture(scope="session")
def fixtures() -> Path:
    """The directories the main virtual environment converted (see tests.helpers.runtime_only_fixtures)."""
    root = Path(os.environ[ENV])
    assert (root / "bundle").is_dir(), f"{root} holds no runtime-only fixtures: run make test-runtime-only"
    return root
