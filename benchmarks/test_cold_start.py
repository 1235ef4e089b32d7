"""Cold start: the first call of a loaded artifact in a fresh process, with JAX's cache warm.

One group (kind ``"coldstart"``), each round a new child process that loads
the MLP of about 2,000 StableHLO operations (saved with ``jaxport.save``)
and calls it once:

* ``jaxport``: ``jaxport.load`` and ``call``, with JAX's persistent
  compilation cache warm (an earlier child called the same artifact);
* ``jax.export``: ``jax.export.deserialize`` and ``call`` of the same bytes,
  with the same cache directory, warm for it likewise;
* ``baseline``: jaxport without a compilation cache (the call compiles), to
  show what the cache saves.

The cache is configured as JAX users configure it, through the children's
environment: ``JAX_COMPILATION_CACHE_DIR``, with
``JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0`` and
``JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES=-1``. Each child times its own
first call (``exp.call(x)`` until the result is ready, after imports and
loading) and reports it; the benchmark records those times in
``extra_info["first_call_s"]``, which the report uses instead of the whole
child's wall time, and checks from JAX's monitoring events that the warm
children did hit the cache. The goal: jaxport / jax.export at most 1.1x.

Where a hit's time goes, for both: lowering the call (which deserializes the
artifact's module: JAX's cache key is a digest of the lowered program), the
key, reading and decompressing the entry, XLA loading the executable and its
first execution.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import pytest
from pytest_benchmark.fixture import BenchmarkFixture

import jaxport

from .conftest import Label, Role, alternating_chunks
from .models import LAYERS_2K, MlpFactory, input_spec

GROUP = "cold start: first call in a fresh process, JAX's cache warm (MLP 2k ops)"
ROUNDS = 2
CHILD = """
import json, sys, time
import jax
import numpy as np
hits = []
jax.monitoring.register_event_listener(
    lambda event, **_: hits.append(event) if event == "/jax/compilation_cache/cache_hits" else None)
if sys.argv[2] == "jax.export":
    from jax import export
    exp = export.deserialize(bytearray(open(sys.argv[1], "rb").read()))
else:
    import jaxport
    exp = jaxport.load(sys.argv[1])
x = np.ones((8, 16), np.float32)
start = time.perf_counter()
exp.call(x).block_until_ready()
print(json.dumps({"first_call_s": time.perf_counter() - start, "hits": len(hits)}))
"""
#: JAX's settings, as environment variables, of a cache that keeps every compilation.
KEEP_EVERY_COMPILATION = {"JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
                          "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1"}


@pytest.fixture(scope="module")
def artifact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("coldstart") / "mlp2k.jaxport"
    jaxport.save(jaxport.export(jax.jit(MlpFactory.with_layers(LAYERS_2K).make()))(input_spec()), path)
    return path


@pytest.fixture(scope="module")
def warm_cache(tmp_path_factory: pytest.TempPathFactory, artifact: Path) -> Path:
    """A JAX compilation cache that a child of each implementation filled by calling the artifact."""
    cache = tmp_path_factory.mktemp("jax-cache")
    for role in ("jaxport", "jax.export"):
        _first_call(artifact, role, cache)
    return cache


def _first_call(artifact: Path, role: str, cache: Path | None) -> dict[str, float]:
    """What a child reports of its first call: seconds, and the cache hits it saw."""
    env = {k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}
    if cache is not None:
        env.update(JAX_COMPILATION_CACHE_DIR=str(cache), **KEEP_EVERY_COMPILATION)
    out = subprocess.run([sys.executable, "-c", CHILD, str(artifact), role], env=env,
                         capture_output=True, text=True, check=True)
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize("chunk, role", alternating_chunks(2, ("baseline", "jaxport", "jax.export")))
def test_first_call_in_a_fresh_process(benchmark: BenchmarkFixture, label: Label, artifact: Path,
                                       warm_cache: Path, chunk: int, role: Role) -> None:
    label(group=GROUP, kind="coldstart", role=role, baseline="no cache", chunk=chunk)
    first_calls: list[float] = []

    def run() -> None:
        if role == "baseline":
            first_calls.append(_first_call(artifact, "jaxport", None)["first_call_s"])
            return
        result = _first_call(artifact, role, warm_cache)
        assert result["hits"] == 1, f"{role}'s first call missed JAX's warm cache"
        first_calls.append(result["first_call_s"])

    benchmark.pedantic(run, rounds=ROUNDS, iterations=1, warmup_rounds=0)
    benchmark.extra_info["first_call_s"] = first_calls
