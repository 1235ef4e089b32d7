"""Reduced precision (issue 39): size and time per call of the GPT-small-sized transformer against float32.

The transformer of ``models.py`` (``fresh_process.save_transformer``: 6 layers of width 512, a tied
embedding of 8,192 tokens, ``int32[b, 64]``) converted to ONNX in float32, ``int8-weights`` and
``int4-weights`` and ``int8`` (calibrated on one batch of random tokens); each directory loaded with ``jaxport.load_converted`` (ONNX Runtime's default session)
and called at ``b = 1`` and ``b = 8``, the roles interleaved in chunks. Groups of kind ``"quantize"``:
``extra_info`` has the directory's size (``bytes``); the report gives each mode's ratios to float32
(size, median per call) with the goals: ``int8-weights`` <= 0.6x per call at b=8, size <= 0.30x
(``int4-weights`` <= 0.20x); ``int8`` <= 0.5x per call at b=8, size <= 0.30x.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pytest_benchmark.fixture import BenchmarkFixture

import jaxport

from .conftest import alternating_chunks
from .fresh_process import save_transformer
from .models import GPT_TOKENS, GPT_VOCAB

MODES = ("float32", "int8-weights", "int4-weights", "int8")
ROUNDS = {1: 30, 8: 10}


@pytest.fixture(scope="module")
def directories(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    pytest.importorskip("onnxruntime", reason="needs jaxport[onnx]")
    root = tmp_path_factory.mktemp("quantize-bench")
    source, _, _ = save_transformer(root)
    out = {}
    ids = np.random.default_rng(0).integers(0, GPT_VOCAB, (8, GPT_TOKENS)).astype(np.int32)
    for mode in MODES:
        out[mode] = root / mode
        jaxport.to_onnx(source, out[mode], quantize=None if mode == "float32" else mode,
                        calibration={"predict": [((ids,), {})]} if mode == "int8" else None)
    return out


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


@pytest.mark.parametrize("batch", [1, 8])
@pytest.mark.parametrize("chunk, role", alternating_chunks(2, MODES))
def test_call(benchmark: BenchmarkFixture, directories: dict[str, Path], batch: int, chunk: int, role: str) -> None:
    benchmark.group = f"ONNX quantized per call: transformer b={batch}"
    benchmark.extra_info.update(kind="quantize", role=role, baseline="float32", model="transformer", batch=batch,
                                chunk=chunk, bytes=_size(directories[role]), load=round(os.getloadavg()[0], 1))
    function = jaxport.load_converted(directories[role])["predict"]
    x = np.zeros((batch, GPT_TOKENS), np.int32)

    def call() -> Any:
        return function(x)
    benchmark.pedantic(call, rounds=ROUNDS[batch], iterations=1, warmup_rounds=3)
