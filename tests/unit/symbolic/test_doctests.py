"""The examples in the docstrings of the symbolic-shape modules run."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["clipping", "expr", "parser", "scope"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(f"jaxport.domain.symbolic.{name}")
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
