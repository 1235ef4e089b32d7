"""The jaxport command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

import jaxport
from jaxport.application.cli import main


@pytest.fixture(scope="module")
def artifact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "sin.jaxport"
    jaxport.save(jaxport.export(jnp.sin)(np.zeros((2, 3), np.float32)), path)
    return path


def test_inspect_prints_the_signature(artifact: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(artifact)]) == 0
    out = capsys.readouterr().out
    assert "sin(float32[2,3]) -> float32[2,3]" in out and "StableHLO 1.15.0" in out


def test_inspect_json_is_one_object_per_artifact(artifact: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", "--json", str(artifact)]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["fun_name"] == "sin" and record["platforms"] == ["cpu"]


def test_a_bad_file_is_reported_with_status_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"not an artifact")
    assert main(["inspect", str(bad)]) == 1
    assert str(bad) in capsys.readouterr().err


def test_mlir_prints_the_module(artifact: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mlir", str(artifact)]) == 0
    assert "stablehlo.sine" in capsys.readouterr().out


def test_the_module_runs_as_a_program_without_loading_jax(artifact: Path) -> None:
    probe = ("import sys, runpy; sys.argv = ['jaxport', 'inspect', sys.argv[1]]\n"
             "try:\n    runpy.run_module('jaxport.application.cli', run_name='__main__')\n"
             "except SystemExit as e:\n    assert e.code == 0\n"
             "assert not any(m == 'jax' or m.startswith(('jax.', 'jaxlib')) for m in sys.modules)")
    subprocess.run([sys.executable, "-c", probe, str(artifact)], check=True, capture_output=True)
