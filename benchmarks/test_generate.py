"""Generating tokens side by side: a hand-written ``jax.jit`` loop, the bundle, ONNX Runtime, LiteRT, IREE, TF.

The GPT-small-sized model of ``generative.py`` (about 88 MiB of float32
weights, a cache of 128), greedy, a prompt of 32 tokens and 64 new ones, at
batch 1 and 8. Groups (kind ``"generate"``; ``extra_info`` holds the tokens
made per round, ``tokens``, and the machine's load average, ``load``):

* ``tokens``: a whole generation. Roles: ``jax.jit`` (the hand-written loop
  of the original steps, the cache donated, greedy on the host), ``bundle``
  (``jaxport.load_generator`` of the bundle: JAX, the cache donated),
  ``onnx`` (of its ONNX directory: I/O binding, the cache in ONNX Runtime's
  buffers), ``onnx loop`` (a hand-written loop over ``load_converted``'s
  calls: the cache goes to NumPy and back every token), ``litert`` (one
  ``model.tflite``, the cache in ``CompiledModel``'s tensor buffers),
  ``iree`` (compiled for ``s = 32``, ``b`` = 1 and 8) and ``savedmodel``
  (a TF SavedModel of dynamic shapes, the cache in TensorFlow's tensors).
* ``first token``: the same with one new token (the prefill, and the pick).
* ``tokens GenAI``: the same transformer laid out as ONNX Runtime GenAI's
  decoders are (``generative.save_genai``), its one ONNX directory run by
  ``onnx`` (``jaxport.load_generator``) and by ``genai`` (GenAI's own
  ``Generator``, greedy, from the directory's ``genai_config.json``); the
  report gives their speed against ``genai``'s. Both run ONNX Runtime with
  GenAI's default thread count (half the machine's cores, as GenAI's
  session options choose it; jaxport's default is every core).
* ``peak memory``: each loop in a fresh child process of its own, 64 and
  256 new tokens (a cache of 320), its peak resident memory (``VmHWM``):
  ``bundle``, ``onnx``, ``litert`` (the cache in ``CompiledModel``'s tensor
  buffers), ``iree``, ``savedmodel`` (the cache in TensorFlow's tensors), and
  ``jax.jit`` with and without the cache donated (goal: 256 tokens' peak
  <= 1.05x 64 tokens').

The report prints tokens per second against ``jax.jit``'s and the peaks.
Nothing here asserts on wall-clock times. Three rounds per chunk swing more
than a few per cent on a loaded machine: ``generate_alternating.py`` times
the bundle against ``jax.jit`` alone, in many alternating rounds, with CPU time.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pytest_benchmark.fixture import BenchmarkFixture

import jaxport
from jaxport.domain.targets.registry import TARGETS

from . import generative
from .conftest import alternating_chunks

PROMPT, NEW, MAX_LENGTH = 32, 64, 128
ROLES = ("jax.jit", "bundle", "onnx", "onnx loop", "litert", "iree", "savedmodel")
Loop = Callable[[np.ndarray, int], list[list[int]]]


def _converted(root: Path, max_length: int, batches: tuple[int, ...]) -> Path:
    """The model saved at ``root / "bundle"`` and converted to every installed target (the static
    ones for a prompt of ``PROMPT`` tokens and each of ``batches``)."""
    generative.save(root / "bundle", max_length)
    jaxport.to_onnx(root / "bundle", root / "onnx")
    dims = {"prefill": [{"b": b, "s": PROMPT} for b in batches], "decode": [{"b": b} for b in batches]}
    for target in ("litert", "iree"):
        if all(importlib.util.find_spec(m) is not None for m in TARGETS[target].loads):
            jaxport.convert(root / "bundle", root / target, to=target, dims=dims)
    if all(importlib.util.find_spec(m) is not None for m in TARGETS["savedmodel"].loads):
        jaxport.convert(root / "bundle", root / "savedmodel", to="savedmodel")  # dynamic shapes
    return root


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _converted(tmp_path_factory.mktemp("generate-bench"), MAX_LENGTH, (1, 8))


def _loop(root: Path, role: str) -> Loop:
    if role == "jax.jit":
        loop: Loop = generative.jit_loop(MAX_LENGTH)
        return loop
    if role == "onnx loop":
        return _onnx_loop(root)
    if not (root / role).exists():
        pytest.skip(f"{role} is not installed")
    generator = jaxport.load_generator(root / role)
    return lambda prompts, new: generator.generate(prompts.tolist(), new)


def _onnx_loop(root: Path) -> Loop:
    """The hand-written loop over the ONNX directory's checked calls (the cache to NumPy and back)."""
    model = jaxport.load_converted(root / "onnx")
    prefill, decode = model["prefill"], model["decode"]

    def loop(prompts: np.ndarray, new: int) -> list[list[int]]:
        b, s = prompts.shape
        cache = [{"k": np.zeros((b, MAX_LENGTH, generative.GPT_WIDTH), np.float32),
                  "v": np.zeros((b, MAX_LENGTH, generative.GPT_WIDTH), np.float32)}
                 for _ in range(generative.GPT_LAYERS)]
        logits, cache = prefill(prompts, np.tile(np.arange(s, dtype=np.int32), (b, 1)), cache)
        out = [np.argmax(logits[:, -1], axis=-1)]
        for i in range(new - 1):
            logits, cache = decode(out[-1][:, None].astype(np.int32), np.full((b, 1), s + i, np.int32), cache)
            out.append(np.argmax(logits[:, -1], axis=-1))
        tokens: list[list[int]] = np.stack(out, axis=1).tolist()
        return tokens

    return loop


def _label(benchmark: BenchmarkFixture, quantity: str, role: str, baseline: str = "jax.jit", **extra: object) -> None:
    benchmark.group = f"generate {quantity}" + (f" b={extra['batch']}" if "batch" in extra else "")
    benchmark.extra_info.update(kind="generate", role=role, baseline=baseline, quantity=quantity,
                                load=round(os.getloadavg()[0], 1), **extra)


def _prompts(batch: int) -> np.ndarray:
    return np.random.default_rng(batch).integers(1, 8192, size=(batch, PROMPT), dtype=np.int32)


@pytest.mark.parametrize("batch", [1, 8])
@pytest.mark.parametrize("chunk, role", alternating_chunks(2, ROLES))
def test_tokens_per_second(benchmark: BenchmarkFixture, model: Path, batch: int, chunk: int, role: str) -> None:
    loop, prompts = _loop(model, role), _prompts(batch)
    _label(benchmark, "tokens", role, chunk=chunk, batch=batch, tokens=batch * NEW)
    tokens = benchmark.pedantic(loop, args=(prompts, NEW), rounds=3, iterations=1, warmup_rounds=1)
    reference = generative.jit_loop(MAX_LENGTH)(prompts, 8) if role != "jax.jit" else None
    benchmark.extra_info["same_first_8_as_jax_jit"] = reference is None or [t[:8] for t in tokens] == reference


@pytest.mark.parametrize("batch", [1, 8])
@pytest.mark.parametrize("chunk, role", alternating_chunks(2, ROLES))
def test_time_to_first_token(benchmark: BenchmarkFixture, model: Path, batch: int, chunk: int, role: str) -> None:
    loop, prompts = _loop(model, role), _prompts(batch)
    _label(benchmark, "first token", role, chunk=chunk, batch=batch, tokens=batch)
    benchmark.pedantic(loop, args=(prompts, 1), rounds=5, iterations=1, warmup_rounds=1)


#: The intra-op threads of GenAI's sessions unless its config says otherwise (onnxruntime-genai's model.cpp).
GENAI_THREADS = min(16, max(1, (os.cpu_count() or 2) // 2))


@pytest.fixture(scope="module")
def genai_layout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ONNX directory of the GenAI-layout model (it carries genai_config.json)."""
    if importlib.util.find_spec("onnxruntime_genai") is None:
        pytest.skip("onnxruntime-genai is not installed (pip install 'jaxport[genai]')")
    root = tmp_path_factory.mktemp("generate-genai")
    generative.save_genai(root / "bundle", MAX_LENGTH)
    jaxport.to_onnx(root / "bundle", root / "onnx")
    assert (root / "onnx" / "genai_config.json").exists()
    return root / "onnx"


def _genai_loop(path: Path) -> Loop:
    """GenAI's own greedy loop over the directory (its public Python API), the model loaded once."""
    import onnxruntime_genai as og

    model = og.Model(str(path))

    def loop(prompts: np.ndarray, new: int) -> list[list[int]]:
        b, s = prompts.shape
        params = og.GeneratorParams(model)
        params.set_search_options(max_length=s + new, batch_size=b)
        generator = og.Generator(model, params)
        generator.append_tokens(prompts)
        while not generator.is_done():
            generator.generate_next_token()
        return [[int(t) for t in generator.get_sequence(row)[s:]] for row in range(b)]

    return loop


@pytest.mark.parametrize("batch", [1, 8])
@pytest.mark.parametrize("chunk, role", alternating_chunks(2, ("onnx", "genai")))
def test_tokens_per_second_against_genai(benchmark: BenchmarkFixture, genai_layout: Path, batch: int, chunk: int,
                                         role: str) -> None:
    if role == "genai":
        loop = _genai_loop(genai_layout)
    else:
        generator = jaxport.load_generator(genai_layout, threads=GENAI_THREADS)
        loop = lambda prompts, new: generator.generate(prompts.tolist(), new)  # noqa: E731
    prompts = _prompts(batch)
    _label(benchmark, "tokens GenAI", role, "genai", chunk=chunk, batch=batch, tokens=batch * NEW)
    tokens = benchmark.pedantic(loop, args=(prompts, NEW), rounds=3, iterations=1, warmup_rounds=1)
    benchmark.extra_info["same_first_8_as_genai"] = \
        role == "genai" or [t[:8] for t in tokens] == [t[:8] for t in _genai_loop(genai_layout)(prompts, 8)]


CHILD = """
import json, sys
import numpy as np
role, root, steps, max_length = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
prompt = np.arange(1, 33, dtype=np.int32)[None]
if role.startswith("jax.jit"):
    import jax, jax.numpy as jnp
    from benchmarks import generative
    if role == "jax.jit":
        generative.jit_loop(max_length)(prompt, steps)
    else:  # the same loop, the cache not donated: each step's new cache beside the old one
        weights = jax.tree.map(jnp.asarray, generative.params(max_length))
        jitted = jax.jit(generative.step)
        cache = jax.tree.map(lambda a: jnp.zeros(a.shape, a.dtype), generative.empty_cache(1, max_length))
        logits, cache = jitted(weights, prompt, np.arange(32, dtype=np.int32)[None], cache)
        for i in range(steps - 1):
            token = np.argmax(np.asarray(logits[:, -1]), axis=-1)[:, None].astype(np.int32)
            logits, cache = jitted(weights, token, np.full((1, 1), 32 + i, np.int32), cache)
else:
    import jaxport
    jaxport.load_generator(root + "/" + role).generate(prompt.tolist(), steps)
peak = next(int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"peak_bytes": peak}))
"""


@pytest.fixture(scope="module")
def long_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _converted(tmp_path_factory.mktemp("generate-long"), 320, (1,))


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="VmHWM is Linux's")
@pytest.mark.parametrize("role", ["bundle", "onnx", "litert", "iree", "savedmodel", "jax.jit", "jax.jit copied"])
def test_peak_memory_of_a_long_loop(benchmark: BenchmarkFixture, long_model: Path, role: str) -> None:
    if not role.startswith("jax.jit") and not (long_model / role).exists():
        pytest.skip(f"{role} is not installed")
    peaks: dict[int, int] = {}

    def run() -> None:
        for steps in (64, 256):
            done = subprocess.run([sys.executable, "-c", CHILD, role, str(long_model), str(steps), "320"],
                                  capture_output=True, text=True, timeout=600, cwd=Path(__file__).parents[1])
            assert done.returncode == 0, done.stderr[-3000:]
            peaks[steps] = json.loads(done.stdout.strip().splitlines()[-1])["peak_bytes"]

    _label(benchmark, "peak memory", role)
    benchmark.pedantic(run, rounds=1, iterations=1, warmup_rounds=0)
    cache = 2 * generative.GPT_LAYERS * 320 * generative.GPT_WIDTH * 4
    benchmark.extra_info.update(peak_64=peaks[64], peak_256=peaks[256], cache_bytes=cache,
                                peak_ratio=peaks[256] / peaks[64])
