"""tests/unit runs without JAX: a pytest process that runs it (this test aside) imports neither jax nor jaxlib."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_process_that_runs_the_unit_tests_imports_no_jax(tmp_path: Path) -> None:
    report = tmp_path / "loaded.json"
    env = {**os.environ, "JAXPORT_TEST_LOADED_MODULES": str(report)}
    this_test = f"tests/unit/{Path(__file__).name}::test_a_process_that_runs_the_unit_tests_imports_no_jax"
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "tests.helpers.loaded_modules",
         "tests/unit", f"--deselect={this_test}"],
        cwd=ROOT, env=env, capture_output=True, text=True)
    assert report.exists(), out.stdout[-3000:] + out.stderr[-3000:]
    found = json.loads(report.read_text())
    assert found["tests"] > 100, found  # the unit tests ran, not an empty session
    assert found["loaded"] == [], f"{found['loaded']}\n{out.stdout[-3000:]}"
