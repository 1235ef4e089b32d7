"""One composition root: only ``application/wiring.py`` builds the adapters the services run on,
each once, and importing it builds and imports nothing heavy.

The static check reads the sources with :mod:`ast`; it imports nothing.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import threading
import time
from pathlib import Path

from jaxport.application.wiring import _built_once

SRC = Path(__file__).resolve().parents[2] / "src"
ROOT = SRC / "application" / "wiring.py"
#: The classes whose instances the services share; tests build their own freely (and a service on
#: their own ports, through its constructor).
WIRED = {"JaxLowerer", "MlirStableHlo", "FileVerdictStore", "StatKnownFiles"}
#: The services, each built once in the composition root (tests build their own on their own ports);
#: the modules that define them never import the root, which would be an import cycle.
SERVICES = {"ExportService": SRC / "adapters" / "jax" / "lowering" / "service.py",
            "ArtifactVerifier": SRC / "application" / "export" / "verifier.py",
            "ConversionPipeline": SRC / "application" / "conversion" / "pipeline.py",
            "BundleLoader": SRC / "application" / "bundles" / "load.py",
            "DirectoryVerifier": SRC / "application" / "conversion" / "verify_directory.py",
            "ConvertedLoader": SRC / "application" / "conversion" / "loader.py",
            "GeneratorFactory": SRC / "application" / "generation" / "factory.py",
            "UpgradeService": SRC / "application" / "upgrade" / "service.py"}
#: The thin modules of the services' public functions: each asks the root for its service (``save_bundle``'s
#: module for the generator factory's tokenizer and chat template, which must read a bundle's).
PUBLIC = (SRC / "application" / "export" / "service.py", SRC / "application" / "export" / "serialization.py",
          SRC / "application" / "verify_artifact.py", SRC / "application" / "bundles" / "api.py",
          SRC / "application" / "bundles" / "save.py", SRC / "application" / "conversion" / "api.py",
          SRC / "application" / "generation" / "api.py", SRC / "application" / "upgrade" / "api.py")
#: The process-wide objects that the JAX-facing adapters own, as ``jax.export`` owns its registry:
#: ``jaxport.register_pytree_node_serialization`` registers into the default registry, which every
#: ``Exported`` reads, and ``Exported.serialize(consumer=...)`` has the process's one verifying child
#: write modules for older consumers, through its forms (an adapter may not import the composition
#: root, which hands the same objects to the services). Each is built in one place.
ADAPTER_DEFAULTS = {"PytreeSerializationRegistry": SRC / "adapters" / "jax" / "trees" / "registry.py",
                    "ChildModuleWorker": SRC / "adapters" / "mlir" / "worker.py",
                    "ChildModuleForms": SRC / "adapters" / "mlir" / "rewrite.py"}


def _constructions(path: Path, classes: set[str]) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [f"{path.relative_to(SRC)}:{node.lineno}: {node.func.id}()" for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in classes]


def test_only_the_composition_root_builds_the_shared_adapters() -> None:
    elsewhere = [found for path in sorted(SRC.rglob("*.py")) if path != ROOT for found in _constructions(path, WIRED)]
    assert elsewhere == []
    assert len(_constructions(ROOT, WIRED)) == len(WIRED)


def _built_once_functions(path: Path) -> dict[str, str]:
    """Each function of ``path`` decorated with ``@_built_once`` -> the name of the class it returns."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return {node.name: ast.unparse(node.returns) for node in tree.body if isinstance(node, ast.FunctionDef)
            and node.returns is not None and any(isinstance(d, ast.Name) and d.id == "_built_once"
                                                 for d in node.decorator_list)}


def _imports_the_root(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "jaxport.application" and any(
                alias.name == "wiring" for alias in node.names):
            return True
        if isinstance(node, (ast.Import, ast.ImportFrom)) and "jaxport.application.wiring" in (
                [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module]):
            return True
    return False


def test_each_service_is_built_once_in_the_root_and_nowhere_else() -> None:
    services = set(SERVICES)
    assert sorted(set(_built_once_functions(ROOT).values()) & services) == sorted(services)
    assert len(_constructions(ROOT, services)) == len(services)
    elsewhere = [found for path in sorted(SRC.rglob("*.py")) if path != ROOT
                 for found in _constructions(path, services)]
    assert elsewhere == []


def test_the_modules_that_define_the_services_do_not_import_the_root() -> None:
    assert [str(home.relative_to(SRC)) for home in SERVICES.values() if _imports_the_root(home)] == []


def test_the_public_functions_ask_the_root_for_their_services() -> None:
    assert [str(thin.relative_to(SRC)) for thin in PUBLIC if not _imports_the_root(thin)] == []


def test_only_the_public_functions_and_the_command_line_ask_the_root() -> None:
    cli = SRC / "application" / "cli"
    askers = {path for path in SRC.rglob("*.py") if path != ROOT and _imports_the_root(path)}
    assert sorted(str(p.relative_to(SRC)) for p in askers - set(PUBLIC) if p.parent != cli) == []


def test_the_root_builds_services_not_a_factory_per_target() -> None:
    # Each target's adapters are one entry of target_adapters' table, handed to the converted loader whole.
    from jaxport.application.target_adapters import ADAPTERS

    tree = ast.parse(ROOT.read_text(encoding="utf-8"))
    functions = [node.name for node in tree.body if isinstance(node, ast.FunctionDef)]
    assert [f for f in functions for name in ADAPTERS if name in f.split("_")] == []


def test_each_adapter_default_is_built_in_its_one_place() -> None:
    for name, home in ADAPTER_DEFAULTS.items():
        sites = [found for path in sorted(SRC.rglob("*.py")) for found in _constructions(path, {name})]
        assert [s.split(":")[0] for s in sites] == [str(home.relative_to(SRC))], sites


def test_threads_racing_on_a_first_use_get_one_object() -> None:
    built: list[object] = []

    def build() -> object:
        time.sleep(0.01)  # widens the race
        built.append(object())
        return built[-1]

    get = _built_once(build)
    got: list[object] = []
    threads = [threading.Thread(target=lambda: got.append(get())) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(built) == 1 and all(g is built[0] for g in got)


def test_importing_the_root_builds_nothing_and_imports_no_jax_nor_adapter() -> None:
    probe = ("import sys, jaxport.application.wiring\n"
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('jax', 'jaxlib', 'numpy')"
             " or m.startswith('jaxport.adapters')))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
