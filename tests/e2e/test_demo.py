"""The demo that `make demo` runs."""

from __future__ import annotations

import pytest

from jaxport.application import demo


def test_the_demo_exports_calls_and_matches_the_original(capsys: pytest.CaptureFixture[str]) -> None:
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
