"""The modules under src/ form a DAG (DESIGN.md: no import cycle, counting imports under
``TYPE_CHECKING`` and inside functions).

Every ``import``/``from ... import`` of a jaxport module counts: at module level, inside a
function (a lazy import only hides a cycle) and under ``if TYPE_CHECKING:`` (an import for
annotations only is still a dependency that a reader follows). The test reads the source with
:mod:`ast`; it imports nothing.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
ROOT_PACKAGE = "jaxport"
SYMBOLIC = "jaxport.domain.symbolic."


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join((ROOT_PACKAGE, *parts))


def _imports(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement under ``node``, wherever it is."""
    for child in ast.walk(node):
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child


def _packages_of(module: str) -> set[str]:
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def _targets(module: str, is_package: bool, statement: ast.Import | ast.ImportFrom,
             modules: set[str]) -> set[str]:
    """The jaxport modules that ``statement`` in ``module`` executes or needs when it runs."""
    if isinstance(statement, ast.Import):
        bases = [alias.name for alias in statement.names]
        names: list[str] = []
    else:
        if statement.level:
            package = module.split(".") if is_package else module.split(".")[:-1]
            package = package[: len(package) - (statement.level - 1)]
            bases = [".".join([*package, *([statement.module] if statement.module else [])])]
        else:
            bases = [statement.module or ""]
        names = [alias.name for alias in statement.names]
    ancestors = _packages_of(module)
    found: set[str] = set()
    for base in bases:
        if base != ROOT_PACKAGE and not base.startswith(ROOT_PACKAGE + "."):
            continue
        submodules = {f"{base}.{name}" for name in names} & modules
        # The packages on the way are initialized too, unless the importer is inside them already.
        found |= (_packages_of(base) | {base}) - ancestors - {module}
        found |= submodules
        if base in ancestors and len(submodules) < len(names):
            found.add(base)  # a name defined by a package __init__ that is still initializing
    return found & modules


def import_graph() -> dict[str, set[str]]:
    """Each jaxport module to the jaxport modules it imports."""
    paths = {_module_name(path): path for path in sorted(SRC.rglob("*.py"))}
    modules = set(paths)
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        graph[module] = set().union(*(
            _targets(module, is_package, statement, modules) for statement in _imports(tree)))
        graph[module].discard(module)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as ``[a, b, ..., a]``, or None when it is a DAG."""
    done: set[str] = set()
    for start in sorted(graph):
        if start in done:
            continue
        stack: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        on_path = [start]
        while stack:
            node, successors = stack[-1]
            successor = next(successors, None)
            if successor is None:
                stack.pop()
                on_path.pop()
                done.add(node)
            elif successor in on_path:
                return [*on_path[on_path.index(successor):], successor]
            elif successor not in done:
                stack.append((successor, iter(sorted(graph[successor]))))
                on_path.append(successor)
    return None


def test_every_package_under_src_forms_a_dag() -> None:
    graph = import_graph()
    assert {"jaxport.domain.symbolic.expr", "jaxport.adapters.jax.exported.exported"} <= set(graph)
    # The symbolic layer's own imports are the next test's.
    outside = {m: {t for t in ts if not (m.startswith(SYMBOLIC) and t.startswith(SYMBOLIC))}
               for m, ts in graph.items()}
    assert find_cycle(outside) is None, " -> ".join(find_cycle(outside) or [])


def test_an_import_under_type_checking_counts() -> None:
    graph = import_graph()
    assert "jaxport.adapters.jax.exported.exported" in graph["jaxport.application.cli.common"]


def test_the_symbolic_layer_forms_a_dag() -> None:
    graph = import_graph()
    symbolic = {m: {t for t in ts if t.startswith(SYMBOLIC)} for m, ts in graph.items() if m.startswith(SYMBOLIC)}
    assert SYMBOLIC + "parser" in symbolic[SYMBOLIC + "scope"]  # a scope parses its constraint texts
    assert find_cycle(symbolic) is None, " -> ".join(find_cycle(symbolic) or [])


def test_a_cycle_is_found() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def domain_packages(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The domain's packages (and its top modules) to those they import: ``artifact`` -> ``calls``, ..."""
    def unit(module: str) -> str | None:
        parts = module.split(".")
        return parts[2] if parts[:2] == [ROOT_PACKAGE, "domain"] and len(parts) > 2 else None

    packages: dict[str, set[str]] = {}
    for module, targets in graph.items():
        if (source := unit(module)) is not None:
            packages.setdefault(source, set()).update(t for t in map(unit, targets) if t not in (None, source))
    return packages


def test_the_domains_packages_import_in_one_direction() -> None:
    packages = domain_packages(import_graph())
    assert {"artifact", "calls", "bundle", "converted", "generation", "targets", "serving"} <= set(packages)
    assert "calls" in packages["artifact"]  # a record carries the calls' signature
    assert [(a, b) for a in sorted(packages) for b in sorted(packages[a]) if a in packages.get(b, ())] == []
    assert find_cycle(packages) is None, " -> ".join(find_cycle(packages) or [])
