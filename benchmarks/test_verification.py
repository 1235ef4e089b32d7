"""Verification: what it adds to a cold ``jaxport.load``, beside what ``import jax`` costs.

One group (kind ``"verify"``), each round a new child process:

* ``import jax``: the whole of ``python -c "import jax"``, the price any
  process that calls an artifact pays before loading it;
* ``unverified``: a child that imports JAX and starts its backend, then times
  ``jaxport.load(path, verify=False)``;
* ``verified``: the same child timing ``jaxport.load(path)``, which starts
  the verifying process and has it parse, verify and re-serialize both
  modules of the artifact (the verdict is not remembered: each child gets an
  empty cache directory).

The artifact is the MLP of about 2,000 StableHLO operations with its VJP
(``vjp_order=1``). The children report their load times
(``extra_info["load_s"]``), which the report uses instead of the whole
child's wall time; it shows ``verified - unverified``, what verification
adds, next to the ``import jax`` process. The backend starts before the
clock because the verification asks it whether modules keep Shardy ops, and
a process that calls the artifact starts it anyway.
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

from .conftest import alternating_chunks
from .models import LAYERS_2K, MlpFactory, input_spec

GROUP = "verification: cold jaxport.load in a fresh process (MLP 2k ops, vjp_order=1)"
ROLES = ("import jax", "unverified", "verified")
CHUNKS = 2
ROUNDS = 3
CHILD = """
import json, sys, time
import jax
jax.devices()
import jaxport
start = time.perf_counter()
jaxport.load(sys.argv[1], verify=sys.argv[2] == "verified")
print(json.dumps({"load_s": time.perf_counter() - start}))
"""


@pytest.fixture(scope="module")
def artifact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("verification") / "mlp2k.jaxport"
    jaxport.save(jaxport.export(jax.jit(MlpFactory.with_layers(LAYERS_2K).make()))(input_spec()),
                 path, vjp_order=1)
    return path


def _load_seconds(artifact: Path, role: str) -> float:
    """The time a fresh child takes to load ``artifact`` (``role``: verified or not)."""
    with tempfile.TemporaryDirectory(prefix="jaxport-verify-") as empty:
        env = {**os.environ, "JAXPORT_CACHE_DIR": empty}
        done = subprocess.run([sys.executable, "-c", CHILD, str(artifact), role], env=env,
                              capture_output=True, text=True, check=True)
    seconds: float = json.loads(done.stdout.strip().splitlines()[-1])["load_s"]
    return seconds


@pytest.mark.parametrize("chunk, role", alternating_chunks(CHUNKS, ROLES))
def test_cold_load_with_and_without_verification(benchmark: BenchmarkFixture, artifact: Path,
                                                 chunk: int, role: str) -> None:
    benchmark.group = GROUP
    benchmark.extra_info.update(kind="verify", role=role, baseline="import jax", chunk=chunk)
    if role == "import jax":
        command = [sys.executable, "-c", "import jax"]
        benchmark.pedantic(lambda: subprocess.run(command, check=True), rounds=ROUNDS,
                           iterations=1, warmup_rounds=0)
        return
    loads: list[float] = []
    benchmark.pedantic(lambda: loads.append(_load_seconds(artifact, role)), rounds=ROUNDS,
                       iterations=1, warmup_rounds=0)
    benchmark.extra_info["load_s"] = loads
