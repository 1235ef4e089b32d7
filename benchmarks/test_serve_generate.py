"""Serving a model that generates: ``jaxport serve``'s OpenAI endpoints against the runtime's own batch.

The GPT-small-sized model of ``generative.py`` (per-row positions, a cache of
128), prompts of 32 tokens, 64 new ones each, greedy; on the bundle (JAX) and
on its ONNX directory (ONNX Runtime), each measured in one run:

* ``ceiling``: ``jaxport.load_generator``'s own loop at batch 8 against batch 1,
  in tokens per second (what a server that joins 8 requests can reach at best);
* ``server``: the server's aggregate tokens per second with 8 concurrent
  streams, with 1 stream, and with the same 8 requests sent one at a time
  (``openai`` client, 127.0.0.1); the 8 streams' time to first token, median
  and 95th percentile, as the client sees it (the warm-up's left out);
* ``peer``: ``onnxruntime-genai``'s own ``Generator`` on the same 8 prompts at
  batch 8, where it is installed, on the ``genai`` role: the same GPT in
  GenAI's layout (``generative.save_genai``: a mask, not per-row positions,
  so the server runs its requests one at a time), whose ONNX directory
  carries a ``genai_config.json``.

Each quantity is the median of rounds that alternate all the runs (the machine is shared);
``extra_info`` holds the figures and the load average. Nothing asserts on times.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pytest_benchmark.fixture import BenchmarkFixture

import jaxport
from tests.helpers.openai_serving import client
from tests.helpers.serving import Server

from . import generative

PROMPT, NEW, MAX_LENGTH, STREAMS, ROUNDS = 32, 64, 128, 8, 3


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("serve-generate-bench")
    generative.save(root / "bundle", MAX_LENGTH)
    jaxport.to_onnx(root / "bundle", root / "onnx")
    if importlib.util.find_spec("onnxruntime_genai") is not None:  # the peer runs a model in its layout
        generative.save_genai(root / "genai bundle", MAX_LENGTH)
        jaxport.to_onnx(root / "genai bundle", root / "genai")
    return root


def _prompts() -> list[list[int]]:
    rows: list[list[int]] = np.random.default_rng(0).integers(1, 8192, size=(STREAMS, PROMPT)).tolist()
    return rows


def _median_rates(runs: dict[str, Callable[[], int]], warm: Callable[[], None]) -> dict[str, float]:
    """Each run's median tokens per second over :data:`ROUNDS` alternating rounds (after one warm-up each,
    then ``warm``)."""
    for run in runs.values():
        run()
    warm()
    rates: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(ROUNDS):
        for name, run in runs.items():
            start = time.perf_counter()
            tokens = run()
            rates[name].append(tokens / (time.perf_counter() - start))
    return {name: statistics.median(values) for name, values in rates.items()}


def _stream(server: Server, prompt: list[int], firsts: list[float], start: float) -> int:
    chunks = client(server).completions.create(model="m", prompt=prompt, max_tokens=NEW, temperature=0, stream=True)
    count = 0
    for chunk in chunks:
        if chunk.choices and chunk.choices[0].model_extra["token_ids"]:
            if count == 0:
                firsts.append(time.perf_counter() - start)
            count += 1
    return count


def _concurrent(server: Server, prompts: list[list[int]], firsts: list[float]) -> int:
    counts: list[int] = []
    start = time.perf_counter()
    threads = [threading.Thread(target=lambda p=p: counts.append(_stream(server, p, firsts, start))) for p in prompts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(600)
    return sum(counts)


def _peer(directory: Path, prompts: list[list[int]]) -> Callable[[], int] | None:
    """onnxruntime-genai's own greedy ``Generator`` on ``prompts`` at batch 8 (None: no config or not installed)."""
    if not (directory / "genai_config.json").exists() or importlib.util.find_spec("onnxruntime_genai") is None:
        return None
    og: Any = importlib.import_module("onnxruntime_genai")  # untyped; the genai extra's
    genai_model = og.Model(str(directory))

    def run() -> int:
        params = og.GeneratorParams(genai_model)
        params.set_search_options(max_length=PROMPT + NEW, batch_size=len(prompts))
        generator = og.Generator(genai_model, params)
        generator.append_tokens(np.asarray(prompts, np.int32))
        while not generator.is_done():
            generator.generate_next_token()
        return sum(len(generator.get_sequence(row)) - PROMPT for row in range(len(prompts)))

    return run


@pytest.mark.parametrize("role", ["bundle", "onnx", "genai"])
def test_serving_tokens_per_second(benchmark: BenchmarkFixture, model: Path, role: str) -> None:
    directory, prompts = model / role, _prompts()
    if not directory.exists():
        pytest.skip("onnxruntime-genai is not installed (pip install 'jaxport[genai]')")
    generator = jaxport.load_generator(directory)
    figures: dict[str, Any] = {}

    def measure() -> None:
        server = Server(directory, ("--max-slots", str(STREAMS), "--model-name", "m"),
                        model / f"{role}.log").start()
        firsts: list[float] = []
        peer = _peer(directory, prompts)
        try:
            rates = _median_rates({
                "batch 1": lambda: len(generator.generate(prompts[0], NEW)),
                "batch 8": lambda: sum(map(len, generator.generate(prompts, NEW))),
                "1 stream": lambda: _stream(server, prompts[0], [], time.perf_counter()),
                "8 streams": lambda: _concurrent(server, prompts, firsts),
                "8 one at a time": lambda: sum(_stream(server, p, [], time.perf_counter()) for p in prompts),
                **({} if peer is None else {"onnxruntime-genai batch 8": peer})},
                firsts.clear)  # the warm-up's first tokens waited for compiles: not counted
            served = [client(server).completions.create(model="m", prompt=p, max_tokens=NEW, temperature=0)
                      .choices[0].model_extra["token_ids"] for p in prompts]
        finally:
            server.stop()
        ordered = sorted(firsts)
        figures.update(tokens_per_s=rates, ceiling_ratio=rates["batch 8"] / rates["batch 1"],
                       served_ratio=rates["8 streams"] / rates["1 stream"],
                       against_one_at_a_time=rates["8 streams"] / rates["8 one at a time"],
                       first_token_median_s=statistics.median(ordered),
                       first_token_p95_s=ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))],
                       same_tokens_as_generate=served == generator.generate(prompts, NEW))
        figures["of_ceiling"] = figures["served_ratio"] / figures["ceiling_ratio"]
        figures["of_batch_8"] = rates["8 streams"] / rates["batch 8"]  # the server's 8 streams against the loop's

    benchmark.group = "serve generate"
    benchmark.pedantic(measure, rounds=1, iterations=1, warmup_rounds=0)
    benchmark.extra_info.update(kind="serve generate", role=role, load=round(os.getloadavg()[0], 1), **figures)
    print(f"\n{role}: {figures}")
