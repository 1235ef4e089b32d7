"""Every Python example of the guide (docs/*.md) and of README.md runs, as a doctest, in a temporary directory."""

from __future__ import annotations

import doctest
import re
import shlex
import sys
from pathlib import Path

import pytest

from jaxport.application.cli.main import parser

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
PAGES = sorted(DOCS.glob("*.md"))


def blocks(page: Path, language: str) -> list[tuple[int, str]]:
    """The fenced blocks of a page in `language`, with the line each starts on."""
    text = page.read_text()
    return [(text.count("\n", 0, m.start()) + 2, m[2]) for m in BLOCK.finditer(text) if m[1] == language]


def run_examples(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs the page's ```python blocks in order, as one doctest session in `tmp_path`; fails on a failed example."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    # A page may set the cache directory, as a deployment would: it is put back after the page.
    monkeypatch.setenv("JAXPORT_CACHE_DIR", str(tmp_path / "cache"))
    modules_before = set(sys.modules)
    doctests = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    report: list[str] = []
    globs: dict[str, object] = {"__name__": f"guide_{page.stem}"}
    try:
        for line, block in blocks(page, "python"):
            test = doctests.get_doctest(block, globs, f"{page.name}:{line}", str(page), line - 1)
            assert test.examples, f"{page.name}:{line}: a python block without >>> examples would not run"
            runner.run(test, out=report.append, clear_globs=False)
            globs = test.globs  # DocTest copies its globals: later blocks see what earlier ones made
    finally:
        for name in set(sys.modules) - modules_before:
            if str(getattr(sys.modules[name], "__file__", None) or "").startswith(str(tmp_path)):
                del sys.modules[name]  # a module the page wrote into its temporary directory
    assert runner.tries > 0, f"{page.name} has no Python examples"
    assert runner.failures == 0, "".join(report)


def test_the_guide_has_every_page_of_the_index() -> None:
    index = (DOCS / "index.md").read_text()
    linked = set(re.findall(r"\]\(([\w-]+\.md)\)", index))
    assert linked == {p.name for p in PAGES} - {"index.md"}


def test_the_index_numbers_its_pages_one_after_the_other() -> None:
    numbers = [int(n) for n in re.findall(r"^(\d+)\. \[", (DOCS / "index.md").read_text(), re.M)]
    assert numbers == list(range(1, len(PAGES))), numbers  # every page but the index itself


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_the_examples_of_a_page_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if "```python" in page.read_text():
        run_examples(page, tmp_path, monkeypatch)


def test_every_page_with_code_has_runnable_examples_or_says_why() -> None:
    for page in PAGES:
        text = page.read_text()
        if "```python" not in text and page.name not in ("index.md",):
            assert "runnable examples" in text, f"{page.name} has no Python examples and no note saying why"


def test_the_examples_of_the_readme_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_examples(README, tmp_path, monkeypatch)


def test_the_readme_is_short_and_gives_the_two_commands_for_a_fresh_machine() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 200
    commands = [shlex.split(line, comments=True) for _, block in blocks(README, "sh") for line in block.splitlines()]
    assert ["make", "demo"] in commands and ["make", "test"] in commands


def test_the_readmes_command_lines_are_ones_the_jaxport_command_accepts() -> None:
    lines = [line for _, block in blocks(README, "sh") for line in block.splitlines() if line.startswith("jaxport ")]
    assert lines
    for line in lines:
        try:
            parser().parse_args(shlex.split(line, comments=True)[1:])
        except SystemExit:
            pytest.fail(f"README.md: the jaxport command refuses {line!r}")


def test_the_readmes_links_into_the_guide_lead_to_pages() -> None:
    linked = re.findall(r"\]\((docs/[\w-]+\.md)\)", README.read_text())
    assert linked
    missing = [link for link in linked if not (ROOT / link).is_file()]
    assert not missing, f"README.md links to missing pages: {missing}"


def _install_lines() -> list[tuple[str, list[str]]]:
    """Every ``pip install`` of the README's and the guide's shell blocks and Dockerfiles, as arguments."""
    found = []
    for page in (README, *PAGES):
        for language in ("sh", "dockerfile"):
            for line_number, block in blocks(page, language):
                for offset, line in enumerate(block.splitlines()):
                    if "pip install" not in line:
                        continue
                    words = shlex.split(line.removeprefix("RUN "), comments=True)
                    if words[:2] == ["pip", "install"]:
                        found.append((f"{page.name}:{line_number + offset}", words[2:]))
    return found


def test_every_install_line_installs_the_clone_or_its_wheel_with_extras_that_pyproject_declares() -> None:
    import tomllib

    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    lines = _install_lines()
    assert len(lines) >= 8
    for where, words in lines:
        targets = [w for i, w in enumerate(words) if not w.startswith("-") and words[i - 1] != "--find-links"]
        assert targets, f"{where}: installs nothing"
        for target in targets:
            match = re.fullmatch(r"(\.|jaxport)(?:\[([\w,-]+)\])?", target)
            assert match, f"{where}: {target!r} is neither the clone ('.[...]') nor its wheel ('jaxport[...]')"
            # jaxport is not on PyPI: by name, only from the wheels that make wheel writes.
            assert match[1] == "." or "--find-links" in words, f"{where}: {target!r} without --find-links"
            assert set((match[2] or "").split(",")) - {""} <= extras, f"{where}: {target!r} names no such extra"


def test_the_guide_states_the_jax_range_that_pyproject_declares() -> None:
    import tomllib

    jax = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["jax"][0]
    low, high = re.fullmatch(r"jax>=([\d.]+),<([\d.]+)", jax).groups()  # type: ignore[union-attr]
    *head, last = high.split(".")  # the release before the first untested one: <0.13 is 0.12.x, <0.12.1 is 0.12.0
    said = f"jax {low} to " + (f"0.{int(last) - 1}.x" if len(head) == 1 else ".".join([*head, str(int(last) - 1)]))
    for page in (README, DOCS / "index.md"):
        assert said in " ".join(page.read_text().split()), (page.name, said)


def test_the_onnx_page_says_what_the_onnx_runtime_extra_installs() -> None:
    import tomllib

    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["onnx-runtime"]
    assert [re.split(r"[<>=]", r)[0] for r in extra] == ["onnxruntime"]  # ONNX Runtime alone: no onnx
    (said,) = [line for line in (DOCS / "onnx.md").read_text().splitlines() if "'jaxport[onnx-runtime]'" in line]
    assert "ONNX Runtime alone" in said and "onnx to check" not in said
