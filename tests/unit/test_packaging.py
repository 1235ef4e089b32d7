"""pyproject.toml installs every package under src/."""

from __future__ import annotations

import tomllib
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
