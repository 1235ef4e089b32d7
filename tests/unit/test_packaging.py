"""pyproject.toml installs every package under src/ and declares what it imports."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_package_under_src_is_listed_in_pyproject() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    found = {".".join(("jaxport", *p.parent.relative_to(ROOT / "src").parts))
             for p in (ROOT / "src").rglob("__init__.py")}
    assert found == listed


def test_the_makefile_writes_the_console_script_that_pyproject_declares() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    module, _, function = config["project"]["scripts"]["jaxport"].partition(":")
    assert f"from {module} import {function}" in (ROOT / "Makefile").read_text()


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_every_third_party_module_that_src_imports_is_a_declared_dependency() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = [*project["dependencies"],
                    *(r for extra, rs in project.get("optional-dependencies", {}).items()
                      if extra != "dev" for r in rs)]
    declared = {_normalized(re.split(r"[\s<>=!~;\[]", r, maxsplit=1)[0]) for r in requirements}
    imported: dict[str, set[str]] = {}
    for path in (ROOT / "src").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0
                     and node.module else [])
            for name in names:
                top = name.partition(".")[0]
                if top not in sys.stdlib_module_names and top != "jaxport":
                    imported.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    distributions = packages_distributions()
    undeclared = {top: sorted(paths) for top, paths in imported.items()
                  if not {_normalized(d) for d in distributions.get(top, [top])} & declared}
    assert undeclared == {}


def test_the_version_is_written_once_and_pyproject_the_package_and_the_producer_record_read_it() -> None:
    import tomllib
    from pathlib import Path

    from setuptools.config.expand import read_attr  # type: ignore[import-untyped]  # (no stubs installed)

    import jaxport
    from jaxport.domain.artifact.producer import JAXPORT_VERSION

    root = Path(__file__).resolve().parents[2]
    pyproject = tomllib.loads((root / "pyproject.toml").read_text())
    assert "version" not in pyproject["project"] and "version" in pyproject["project"]["dynamic"]
    attr = pyproject["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    # What setuptools writes into the package's metadata when it builds it (read without importing).
    built = read_attr(attr, package_dir=pyproject["tool"]["setuptools"]["package-dir"], root_dir=root)
    assert built == jaxport.__version__ == JAXPORT_VERSION
    assert JAXPORT_VERSION.count(".") == 2
