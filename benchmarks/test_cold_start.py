"""Cold start: the first call of a loaded artifact in a fresh process.

One group (kind ``"coldstart"``), each round a new child process that loads
the MLP of about 2,000 StableHLO operations (saved with ``jaxport.save``)
and calls it once:

* ``baseline``: jaxport with an empty executable cache (the call compiles);
* ``jaxport``: jaxport with the cache that an earlier child filled (the call
  loads the executable);
* ``jax.export``: ``jax.export.deserialize`` and ``call`` (JAX's persistent
  compilation cache is off by default, so it compiles).

Each child times its own first call (``exp.call(x)`` until the result is
ready, after imports and loading) and reports it; the benchmark records those
times in ``extra_info["first_call_s"]``, which the report uses instead of
the whole child's wall time. The issue's goal: warm / cold <= 0.05.

With each warm round, one more child measures the *XLA floor* of a hit
(``extra_info["floor_s"]``): after loading and lowering untimed, it takes
the cached executable's bytes and times only the backend's
``deserialize_executable`` and the first execution. Any cache of XLA
executables pays that much; the report shows it beside the warm first call,
so that the part of a hit that is jaxport's own is visible.

Where a hit's time goes (2 cores, jaxlib 0.10.2, measured 2026-11-30): about
85 ms in the backend's ``deserialize_executable``, about 85 ms in the first
execution of the executable (a freshly compiled one pays the same; a later
call takes 1 ms), about 40 ms lowering the call (mostly the process's first
MLIR context and dialect imports) and 10 ms for the program digest of the
key. The first two alone are about a third of a cold first call (about
500 ms), so the ratio stays near 0.35-0.5 on this machine whatever jaxport does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import jax
import pytest
from pytest_benchmark.fixture import BenchmarkFixture

import jaxport

from .conftest import Label, Role, alternating_chunks
from .models import LAYERS_2K, MlpFactory, input_spec

GROUP = "cold start: first call in a fresh process (MLP 2k ops)"
ROUNDS = 2
CHILD = """
import json, sys, time
import numpy as np
if sys.argv[2] == "jax.export":
    from jax import export
    exp = export.deserialize(bytearray(open(sys.argv[1], "rb").read()))
else:
    import jaxport
    exp = jaxport.load(sys.argv[1])
x = np.ones((8, 16), np.float32)
start = time.perf_counter()
exp.call(x).block_until_ready()
print(json.dumps({"first_call_s": time.perf_counter() - start}))
"""


FLOOR_CHILD = """
import json, sys, time
import numpy as np
import jaxport
from jaxport.adapters import jax_internals
from jaxport.application.executable_cache import default_cache
from jaxport.domain.cache_entry import decode_entry
from jaxport.domain.executable_key import EXECUTABLE_MAGIC
exp = jaxport.load(sys.argv[1])
x = np.ones((8, 16), np.float32)
cache = default_cache()
lowered = cache.executables.lower(exp._caller._jitted, (x,), {})
key = cache.key(lowered, exp._artifact_digest)
data = cache.store.read(key.digest())
assert data is not None, "the warm cache has no entry for this call"
payload = decode_entry(data, EXECUTABLE_MAGIC, key.encode())
devices = jax_internals.lowering_devices(lowered)
start = time.perf_counter()
executable = devices[0].client.deserialize_executable(payload, devices)
compiled = jax_internals.compiled_from_executable(lowered, executable)
compiled(x).block_until_ready()
print(json.dumps({"floor_s": time.perf_counter() - start}))
"""


@pytest.fixture(scope="module")
def artifact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("coldstart") / "mlp2k.jaxport"
    jaxport.save(jaxport.export(jax.jit(MlpFactory.with_layers(LAYERS_2K).make()))(input_spec()), path)
    return path


@pytest.fixture(scope="module")
def warm_cache(tmp_path_factory: pytest.TempPathFactory, artifact: Path) -> Path:
    """A cache directory that a child filled by calling the artifact once."""
    cache = tmp_path_factory.mktemp("warm-cache")
    _first_call(artifact, "jaxport", cache)
    return cache


def _first_call(artifact: Path, role: Role, cache: Path) -> float:
    return _child_seconds(CHILD, "first_call_s", artifact, cache, role)


def _floor(artifact: Path, cache: Path) -> float:
    return _child_seconds(FLOOR_CHILD, "floor_s", artifact, cache)


def _child_seconds(script: str, field: str, artifact: Path, cache: Path, *args: str) -> float:
    """The time a child running ``script`` reports under ``field``."""
    env = {**os.environ, "JAXPORT_CACHE_DIR": str(cache)}
    out = subprocess.run([sys.executable, "-c", script, str(artifact), *args], env=env,
                         capture_output=True, text=True, check=True)
    seconds: float = json.loads(out.stdout.strip().splitlines()[-1])[field]
    return seconds


@pytest.mark.parametrize("chunk, role", alternating_chunks(2, ("baseline", "jaxport", "jax.export")))
def test_first_call_in_a_fresh_process(benchmark: BenchmarkFixture, label: Label, artifact: Path,
                                       warm_cache: Path, chunk: int, role: Role) -> None:
    label(group=GROUP, kind="coldstart", role=role, baseline="cold cache", chunk=chunk)
    first_calls: list[float] = []
    floors: list[float] = []

    def run() -> None:
        if role == "jaxport":
            first_calls.append(_first_call(artifact, role, warm_cache))
            floors.append(_floor(artifact, warm_cache))
            return
        with tempfile.TemporaryDirectory(prefix="jaxport-cold-") as empty:
            first_calls.append(_first_call(artifact, "jaxport" if role == "baseline" else role,
                                           Path(empty)))

    benchmark.pedantic(run, rounds=ROUNDS, iterations=1, warmup_rounds=0)
    benchmark.extra_info["first_call_s"] = first_calls
    if floors:
        benchmark.extra_info["floor_s"] = floors
