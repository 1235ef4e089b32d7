"""The demo that `make demo` runs."""

from __future__ import annotations

import pytest

from jaxport.application import demo


def test_the_demo_exports_calls_and_matches_the_original(capsys: pytest.CaptureFixture[str]) -> None:
    assert demo.main([]) == 0
    out = capsys.readouterr().out
    assert "args[0]['layers'][0]['w']: float32[8,16]" in out
    assert "results match the original" in out
