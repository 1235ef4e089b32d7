"""Every Python example of the guide (docs/*.md) runs, as a doctest, in a temporary directory."""

from __future__ import annotations

import doctest
import re
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
PAGES = sorted(DOCS.glob("*.md"))


def python_blocks(page: Path) -> list[tuple[int, str]]:
    """The ```python blocks of a page, with the line each starts on."""
    text = page.read_text()
    return [(text.count("\n", 0, m.start()) + 2, m[2]) for m in BLOCK.finditer(text) if m[1] == "python"]


def test_the_guide_has_every_page_of_the_index() -> None:
    index = (DOCS / "index.md").read_text()
    linked = set(re.findall(r"\]\(([\w-]+\.md)\)", index))
    assert linked == {p.name for p in PAGES} - {"index.md"}


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_the_examples_of_a_page_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    # A page may set the cache directory, as a deployment would: it is put back after the page.
    monkeypatch.setenv("JAXPORT_CACHE_DIR", str(tmp_path / "cache"))
    modules_before = set(sys.modules)
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    report: list[str] = []
    globs: dict[str, object] = {"__name__": f"guide_{page.stem}"}
    try:
        for line, block in python_blocks(page):
            test = parser.get_doctest(block, globs, f"{page.name}:{line}", str(page), line - 1)
            assert test.examples, f"{page.name}:{line}: a python block without >>> examples would not run"
            runner.run(test, out=report.append, clear_globs=False)
            globs = test.globs  # DocTest copies its globals: later blocks see what earlier ones made
    finally:
        for name in set(sys.modules) - modules_before:
            if str(getattr(sys.modules[name], "__file__", None) or "").startswith(str(tmp_path)):
                del sys.modules[name]  # a module the page wrote into its temporary directory
    assert runner.failures == 0, "".join(report)


def test_every_page_with_code_has_runnable_examples_or_says_why() -> None:
    for page in PAGES:
        text = page.read_text()
        if "```python" not in text and page.name not in ("index.md",):
            assert "runnable examples" in text, f"{page.name} has no Python examples and no note saying why"
