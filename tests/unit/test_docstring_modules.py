"""Every module that a docstring or a comment under src/ names exists (issue 47, part 5).

A reference is one of:

- ``:mod:`jaxport.x.y``` or a relative ``:mod:`.y``` (resolved from the module that writes it);
- a dotted name ``jaxport.x.y``, or one starting at a layer, ``adapters.x.y`` (and
  ``jaxport.x.y.name``: the longest prefix that is a module must then define ``name``; a placeholder
  in capitals, ``jaxport.errors.X`` or ``jaxport.to_NAME``, stands for any name);
- a path ``src/x/y.py``, or one starting at a layer, ``domain/...py``, ``adapters/...py``,
  ``application/...py`` (relative to src/).

The test reads the sources with :mod:`ast` and :mod:`tokenize`; it imports nothing.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"

_MOD_ROLE = re.compile(r":mod:`~?(\.*[A-Za-z_][\w.]*|\.+)`")
_DOTTED = re.compile(r"(?<![\w./])(jaxport|domain|adapters|application)((?:\.[A-Za-z_]\w*)+)")
_PATH = re.compile(r"(?<![\w./-])(src/|(?=(?:domain|adapters|application)/))((?:\w+/)*\w+\.py)\b")
_PLACEHOLDER = re.compile(r"(^|_)[A-Z]+$")
#: File names that start like a dotted name but are no module (``jaxport.mjs``, the web bundle).
_FILE_SUFFIXES = ("mjs", "js", "json", "toml", "md", "txt", "whl")


def _dotted(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(("jaxport", *parts))


def _module_file(dotted: str) -> Path | None:
    """The file of ``jaxport.a.b`` (a module or a package), or None."""
    parts = dotted.split(".")[1:]
    base = SRC.joinpath(*parts)
    for candidate in (base.with_suffix(".py") if parts else None, base / "__init__.py"):
        if candidate is not None and candidate.is_file():
            return candidate
    return None


def _defines(module: Path, name: str) -> bool:
    """Whether ``module`` binds ``name`` at its top level, or is a package with such a sub-module."""
    if module.name == "__init__.py" and ((module.parent / f"{name}.py").is_file() or (module.parent / name).is_dir()):
        return True
    text = module.read_text()
    if re.search(rf"['\"]{re.escape(name)}['\"]", text):  # a lazy table's entry, an __all__ entry
        return True
    for node in ast.parse(text).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return True
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return True
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if any((alias.asname or alias.name.split(".")[0]) == name for alias in node.names):
                return True
    return False


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    if len(parts) == 2 and parts[1] in _FILE_SUFFIXES:
        return True
    for cut in range(len(parts), 0, -1):
        module = _module_file(".".join(parts[:cut]))
        if module is not None:
            rest = parts[cut:]
            return not rest or bool(_PLACEHOLDER.search(rest[0])) or _defines(module, rest[0])
    return False


def _prose(path: Path) -> Iterator[tuple[int, str]]:
    """The docstrings and comments of one source file, with their first line numbers."""
    text = path.read_text()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                if isinstance(body[0].value.value, str):
                    yield body[0].lineno, body[0].value.value
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string


def _references(path: Path, prose: str) -> Iterator[str]:
    """The modules one piece of prose names, as dotted names (``jaxport...``) or paths under src/."""
    here = _dotted(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    for match in _MOD_ROLE.finditer(prose):
        name = match.group(1)
        if name.startswith("."):
            dots = len(name) - len(name.lstrip("."))
            base = package[: len(package) - dots + 1]
            yield ".".join([*base, *filter(None, name.lstrip(".").split("."))])
        elif name == "jaxport" or name.startswith("jaxport."):
            yield name
    for match in _DOTTED.finditer(prose):
        head, tail = match.groups()
        yield ("jaxport" if head == "jaxport" else f"jaxport.{head}") + tail
    for match in _PATH.finditer(prose):
        yield "src/" + match.group(2)


def dangling_references() -> list[str]:
    """Every reference under src/ that names no existing module, as ``file:line: reference``."""
    dangling = []
    for path in sorted(SRC.rglob("*.py")):
        for line, prose in _prose(path):
            for ref in dict.fromkeys(_references(path, prose)):
                exists = (SRC.parent / ref).is_file() if ref.startswith("src/") else _resolves(ref)
                if not exists:
                    dangling.append(f"{path.relative_to(SRC.parent)}:{line}: {ref}")
    return dangling


def test_the_scanner_finds_each_kind_of_reference() -> None:
    prose = (
        "See :mod:`jaxport.domain.errors`, :mod:`.record`, jaxport.domain.symbolic.expr.DimExpr,"
        " adapters.jax_call, src/domain/ports.py and adapters/mlir/worker.py, not tests/adapters/x.py."
    )
    refs = list(_references(SRC / "domain" / "artifact" / "info.py", prose))
    assert refs == [
        "jaxport.domain.errors",
        "jaxport.domain.artifact.record",
        "jaxport.domain.errors",
        "jaxport.domain.symbolic.expr.DimExpr",
        "jaxport.adapters.jax_call",
        "src/domain/ports.py",
        "src/adapters/mlir/worker.py",
    ]
    assert _resolves("jaxport.domain.symbolic.expr.DimExpr")
    assert not _resolves("jaxport.domain.symbolic.no_such_module")
    assert not _resolves("jaxport.domain.symbolic.expr.NoSuchName")
    assert _resolves("jaxport.errors.X") and _resolves("jaxport.to_NAME")


def test_every_module_a_docstring_or_comment_names_exists() -> None:
    assert dangling_references() == []
