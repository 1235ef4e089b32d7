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
#: The classes whose instances the services share; tests build their own freely.
WIRED = {"JaxLowerer", "MlirModuleInspector", "StableHloSerializer", "ModuleWorker",
         "FileVerdictStore", "PytreeSerializationRegistry"}


def _constructions(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [f"{path.relative_to(SRC)}:{node.lineno}: {node.func.id}()" for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in WIRED]


def test_only_the_composition_root_builds_the_shared_adapters() -> None:
    elsewhere = [found for path in sorted(SRC.rglob("*.py")) if path != ROOT for found in _constructions(path)]
    assert elsewhere == []
    assert len(_constructions(ROOT)) == len(WIRED)


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
