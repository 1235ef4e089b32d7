"""The developers' pages name only paths that exist: a newcomer who follows them finds each file.

Every backquoted path in docs/developers/architecture.md, adding-a-target.md and newest-jax.md (``src/...``,
``tests/...``, ``docs/...``, ``tools/...``, ``benchmarks/...``, ``Makefile``, ``pyproject.toml``)
must exist; ``NAME`` stands for each registered target.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from jaxport.domain.targets.registry import TARGETS

ROOT = Path(__file__).resolve().parents[2]
PAGES = ("docs/developers/architecture.md", "docs/developers/adding-a-target.md", "docs/developers/newest-jax.md")
_PATH = re.compile(r"`((?:src|tests|docs|tools|benchmarks)/[\w./-]*|Makefile|pyproject\.toml)`")


def named_paths(page: str) -> list[str]:
    """The paths ``page`` names, with ``NAME`` replaced by each registered target's name."""
    found: list[str] = []
    for path in _PATH.findall((ROOT / page).read_text(encoding="utf-8")):
        if "PAGE" in path:
            continue
        if "NAME" in path:
            found.extend(path.replace("NAME", name) for name in TARGETS)
        else:
            found.append(path)
    return found


@pytest.mark.parametrize("page", PAGES)
def test_every_path_a_developers_page_names_exists(page: str) -> None:
    paths = named_paths(page)
    assert paths, f"{page} names no path"
    missing = [p for p in paths if not (ROOT / p.rstrip("/")).exists()]
    assert missing == [], f"{page} names paths that do not exist: {missing}"
