"""The test tree's own layout: tests/e2e holds end-to-end tests only (and its conftest), and tests share helpers
through helper modules (tests/helpers, tests/fuzz, ...), never through another test module or a conftest.

The test reads the sources with :mod:`ast`; it imports nothing.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(path: Path) -> Iterator[str]:
    """Every module that ``path`` imports, or may import (``from package import name``)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            parts = package.split(".")
            base = parts[:len(parts) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            yield module
            yield from (f"{module}.{alias.name}" for alias in node.names)


def _is_test_module(name: str) -> bool:
    last = name.rpartition(".")[2]
    return name.split(".")[0] == "tests" and (last.startswith("test_") or last == "conftest")


def test_no_test_imports_from_a_test_module_or_a_conftest() -> None:
    found = [f"{path.relative_to(ROOT)} imports {name}" for path in sorted(TESTS.rglob("*.py"))
             for name in _imported(path) if _is_test_module(name)]
    assert found == []


def test_tests_e2e_holds_test_modules_only() -> None:
    others = [p.name for p in sorted((TESTS / "e2e").glob("*.py"))
              if not p.name.startswith("test_") and p.name not in ("__init__.py", "conftest.py")]
    assert others == []
