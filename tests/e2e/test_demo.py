"""The demo that `make demo` runs (tools/demo.py, outside the package)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

DEMO = Path(__file__).resolve().parents[2] / "tools" / "demo.py"


def test_the_demo_exports_calls_and_matches_the_original(capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("jaxport_demo", DEMO)
    assert spec is not None and spec.loader is not None
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    assert demo.main([]) == 0
    out = capsys.readouterr().out
    assert "args[0]['layers'][0]['w']: float32[8,16]" in out
    assert "args[1]: float32[b,8]" in out
    assert "b=5: the loaded function, called eagerly and under jit, matches the original" in out
    assert "Gradients through the loaded function match" in out
    assert "Saved the model as a bundle: loss.jaxport" in out and "params.safetensors" in out
    assert "layers/0/w  float32  (8, 16)" in out
    assert "b=5: model['predict'] (weights bound) matches the original." in out
    assert "gradient of the loss with respect to the loaded weights matches" in out
    assert "with_params: the same functions with halved weights match" in out
    assert "bundle mlp.bundle (format" in out and "jaxport-demo-" not in out  # no path it deletes on exit
