"""A pytest plugin (``-p tests.helpers.loaded_modules``) that writes, at the end of the session,
the JAX modules the test process loaded to the file named by ``JAXPORT_TEST_LOADED_MODULES``."""

from __future__ import annotations

import json
import os
import sys

import pytest

#: The top-level packages reported (exact names: ``jaxport`` starts with "jax" too).
WATCHED = ("jax", "jaxlib")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Writes the sorted names of the loaded modules of :data:`WATCHED` packages, as JSON."""
    loaded = sorted(name for name in sys.modules if name.split(".")[0] in WATCHED)
    with open(os.environ["JAXPORT_TEST_LOADED_MODULES"], "w", encoding="utf-8") as out:
        json.dump({"loaded": loaded, "tests": session.testscollected}, out)
