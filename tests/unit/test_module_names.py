"""Module names say what they hold: none shadows a standard-library module, and two modules
share a name only as one idea at two levels, which each says by naming the other.

The test reads the sources with :mod:`ast`; it imports nothing.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"


def _dotted(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(("jaxport", *parts))


def _modules() -> list[Path]:
    return [p for p in sorted(SRC.rglob("*.py")) if p.name not in ("__init__.py", "__main__.py")]


def test_no_module_shadows_a_standard_library_module() -> None:
    shadowing = [_dotted(p) for p in _modules() if p.stem in sys.stdlib_module_names]
    assert shadowing == []


def test_modules_that_share_a_name_each_name_another_of_that_name_in_their_docstring() -> None:
    by_name: dict[str, list[Path]] = defaultdict(list)
    for path in _modules():
        by_name[path.stem].append(path)
    silent = []
    for paths in by_name.values():
        if len(paths) < 2:
            continue
        for path in paths:
            doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
            if not any(_dotted(other) in doc for other in paths if other != path):
                silent.append(_dotted(path))
    assert silent == []
