"""The layout of src/ shows the architecture (DESIGN.md, "Layers"): folders by concept and one per
technology or target, module names that say what they hold.

- no module shadows a standard-library module;
- a module named for a technology lives in that technology's folder (or drops the word the folder says);
- no two modules of one folder hold the same words in another order;
- a layer's top holds a dozen modules or so, the rest in folders;
- no module is over 600 lines (a module splits by reason to change, not by a count: DESIGN.md);
- a sub-package's ``__init__.py`` holds a docstring and, at most, re-exports: no logic.

The test reads the sources with :mod:`ast`; it imports nothing.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
LAYERS = ("domain", "adapters", "application")
#: A word in a module's name -> the folders it may live in.
TECHNOLOGY_FOLDERS = {
    "onnx": {"onnx"}, "iree": {"iree"}, "litert": {"litert"}, "tflite": {"litert"},
    "savedmodel": {"savedmodel"}, "tf": {"savedmodel"}, "tensorflow": {"savedmodel"},
    "kserve": {"kserve", "serving"}, "flatbuffers": {"flatbuffers"},
}
#: The most modules directly in each layer (besides ``__init__.py``).
TOP_LIMITS = {"domain": 16, "adapters": 12, "application": 16}
MAX_LINES = 600


def _dotted(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(("jaxport", *parts))


def _modules() -> list[Path]:
    return [p for p in sorted(SRC.rglob("*.py")) if p.name not in ("__init__.py", "__main__.py")]


def test_no_module_shadows_a_standard_library_module() -> None:
    shadowing = [_dotted(p) for p in _modules() if p.stem in sys.stdlib_module_names]
    assert shadowing == []


def test_a_module_named_for_a_technology_lives_in_its_folder() -> None:
    misplaced = []
    for path in _modules():
        folders = set(path.relative_to(SRC).parts[:-1])
        for word in path.stem.split("_"):
            homes = TECHNOLOGY_FOLDERS.get(word)
            # domain/targets/onnx.py: the target's own domain module, named after it.
            named_target = path.parent.name == "targets" and path.stem == word
            if homes and not folders & homes and not named_target:
                misplaced.append(_dotted(path))
    assert misplaced == []


def test_no_two_modules_of_a_folder_hold_the_same_words_in_another_order() -> None:
    by_words: dict[tuple[Path, tuple[str, ...]], list[str]] = defaultdict(list)
    for path in _modules():
        by_words[(path.parent, tuple(sorted(path.stem.split("_"))))].append(path.stem)
    assert [names for names in by_words.values() if len(names) > 1] == []


@pytest.mark.parametrize("layer", LAYERS)
def test_a_layers_top_holds_a_dozen_modules_or_so(layer: str) -> None:
    top = [p.name for p in (SRC / layer).glob("*.py") if p.name != "__init__.py"]
    assert len(top) <= TOP_LIMITS[layer], sorted(top)


def test_no_module_is_over_600_lines() -> None:
    long = {_dotted(p): n for p in _modules() if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}


def _is_all(node: ast.stmt) -> bool:
    return isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["__all__"]


def test_sub_package_inits_hold_no_logic() -> None:
    busy = []
    for init in sorted(SRC.rglob("__init__.py")):
        if init.parent == SRC:
            continue  # the root facade keeps its lazy table
        body = ast.parse(init.read_text(encoding="utf-8")).body
        docstring = body[:1] if body and isinstance(body[0], ast.Expr) else []
        if any(not isinstance(node, (ast.Import, ast.ImportFrom)) and not _is_all(node) for node in body[len(docstring):]):
            busy.append(_dotted(init))
    assert busy == []
