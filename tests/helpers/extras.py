"""Skip marks for the tests of an optional runtime (an extra) that is not installed, saying how to install it."""

from __future__ import annotations

import importlib.util

import pytest


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # the parent package is missing
        return False


#: Skips a test module when IREE's compiler or runtime is missing (``pytestmark = requires_iree``).
requires_iree = pytest.mark.skipif(not (_installed("iree.compiler") and _installed("iree.runtime")),
                                   reason="IREE is not installed (pip install 'jaxport[iree]')")
