"""Reduced precision (issue 39): size and time per call of the GPT-small-sized transformer against float32.

The transformer of ``models.py`` (``fresh_process.save_transformer``: 6 layers of width 512, a tied
embedding of 8,192 tokens, ``int32[b, 64]``) converted to ONNX in float32, ``int8-weights`` and
``int4-weights`` and ``int8`` (calibrated on one batch of random tokens), and to LiteRT in float32,
``float16``, ``int8-weights`` and ``int8``; each directory loaded with ``jaxport.load_converted`` (ONNX Runtime's default session)
and called at ``b = 1`` and ``b = 8``, the roles interleaved in chunks. Groups of kind ``"quantize"``:
``extra_info`` has the directory's size (``bytes``); the report gives each mode's ratios to float32
(size, median per call) with the goals: ``int8-weights`` <= 0.6x per call at b=8, size <= 0.30x
(``int4-weights`` <= 0.20x); ``int8`` <= 0.5x per call at b=8, size <= 0.30x; LiteRT ``float16`` size
<= 0.52x and ``int8`` <= 0.30x (its times reported).
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
LITERT_MODES = ("float32", "float16", "int8-weights", "int8")
ROUNDS = {1: 30, 8: 10}


def _calibration() -> dict[str, Any]:
    ids = np.random.default_rng(0).integers(0, GPT_VOCAB, (8, GPT_TOKENS)).astype(np.int32)
    return {"predict": [((ids,), {})]}


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("quantize-bench")
    return save_transformer(root)[0]


def _converted(source: Path, target: str, modes: tuple[str, ...]) -> dict[str, Path]:
    """The transformer converted for ``target`` in each of ``modes`` (``int8`` calibrated on one batch)."""
    convert = jaxport.to_onnx if target == "onnx" else jaxport.to_litert
    out = {}
    for mode in modes:
        out[mode] = source.parent / f"{target}-{mode}"
        convert(source, out[mode], quantize=None if mode == "float32" else mode,
                calibration=_calibration() if mode == "int8" else None)
    return out


@pytest.fixture(scope="module")
def directories(source: Path) -> dict[str, Path]:
    pytest.importorskip("onnxruntime", reason="needs jaxport[onnx]")
    return _converted(source, "onnx", MODES)


@pytest.fixture(scope="module")
def litert_directories(source: Path) -> dict[str, Path]:
    pytest.importorskip("litert_converter", reason="needs jaxport[litert]")
    return _converted(source, "litert", LITERT_MODES)


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _bench(benchmark: BenchmarkFixture, target: str, directory: Path, batch: int, chunk: int, role: str) -> None:
    benchmark.group = f"{target} quantized per call: transformer b={batch}"
    benchmark.extra_info.update(kind="quantize", role=role, baseline="float32", model="transformer", batch=batch,
                                chunk=chunk, bytes=_size(directory), target=target,
                                load=round(os.getloadavg()[0], 1))
    function = jaxport.load_converted(directory)["predict"]
    x = np.zeros((batch, GPT_TOKENS), np.int32)

    def call() -> Any:
        return function(x)
    benchmark.pedantic(call, rounds=ROUNDS[batch], iterations=1, warmup_rounds=3)


@pytest.mark.parametrize("batch", [1, 8])
@pytest.mark.parametrize("chunk, role", alternating_chunks(2, MODES))
def test_call(benchmark: BenchmarkFixture, directories: dict[str, Path], batch: int, chunk: int, role: str) -> None:
    _bench(benchmark, "ONNX", directories[role], batch, chunk, role)


@pytest.mark.parametrize("batch", [1, 8])
@pytest.mark.parametrize("chunk, role", alternating_chunks(2, LITERT_MODES))
def test_litert_call(benchmark: BenchmarkFixture, litert_directories: dict[str, Path], batch: int, chunk: int,
                     role: str) -> None:
    _bench(benchmark, "LiteRT", litert_directories[role], batch, chunk, role)
