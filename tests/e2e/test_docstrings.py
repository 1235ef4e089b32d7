"""The examples in the docstrings of every module of the package run, in a temporary directory."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

from tests.helpers.extras import importable_modules

MODULES = importable_modules()


def test_the_walk_finds_the_modules_of_every_layer() -> None:
    assert {"jaxport.domain.symbolic.expr", "jaxport.adapters.mlir.module",
            "jaxport.application.cli.export", "jaxport.errors"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
                             report=False, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of {name} failed (run with -s)"


def test_the_package_has_docstring_examples_in_many_modules() -> None:
    finder = doctest.DocTestFinder()
    with_examples = [name for name in MODULES
                     if any(t.examples for t in finder.find(importlib.import_module(name)))]
    assert len(with_examples) >= 10, with_examples
