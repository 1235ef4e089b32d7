"""Skip marks for the tests of an optional runtime (an extra) that is not installed, saying how to install it."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # the parent package is missing
        return False


#: Skips a test module when IREE's compiler or runtime is missing (``pytestmark = requires_iree``).
requires_iree = pytest.mark.skipif(not (_installed("iree.compiler") and _installed("iree.runtime")),
                                   reason="IREE is not installed (pip install 'jaxport[iree]')")


#: The adapters that import an engine at their head, by the package each needs: the engines run in a venv of
#: their own (``make test-engines``), so the main venv cannot import these modules.
ENGINE_ADAPTERS = {"jaxport.adapters.ray": "ray", "jaxport.adapters.beam": "apache_beam"}


def importable_modules() -> list[str]:
    """Every module of the package (``jaxport`` included, its ``__main__`` left out: that one is the
    command itself), less the engine adapters whose engine is not installed here."""
    import pkgutil

    import jaxport

    missing = [prefix for prefix, engine in ENGINE_ADAPTERS.items() if not _installed(engine)]
    names = ["jaxport", *(m.name for m in pkgutil.walk_packages(jaxport.__path__, "jaxport.")
                          if m.name != "jaxport.__main__")]
    return sorted(n for n in names if not any(n == p or n.startswith(p + ".") for p in missing))


def skip_folder_unless(env: str, run: str, folder: Path, items: list[pytest.Item]) -> None:
    """Skips the collected tests under ``folder`` unless the environment variable ``env`` is set (by ``run``,
    the make target that runs the folder in its own virtual environment)."""
    if os.environ.get(env):
        return
    skip = pytest.mark.skip(reason=f"{run} sets {env}")
    for item in items:
        if folder in Path(str(item.fspath)).parents:
            item.add_marker(skip)
