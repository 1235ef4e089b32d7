"""``jaxport serve`` under load: requests per second and p50/p99 latency at 1, 8 and 32 clients.

Two models, each a directory of IREE modules compiled for b = 1, 8 and 32:
the MLP of about 2,000 StableHLO operations over ``f32[b, 16]`` and the
GPT-2-small-sized transformer of ``models.py`` over ``int32[b, 64]`` token ids.
Each is served by ``jaxport serve`` in a process of its own, with batching
off, then on (``--batch predict --max-batch-size 32 --max-batch-delay-ms 2``).
Each round is a client process (``tritonclient.http``, binary tensors, one
thread per client, each sending one-row requests back to back after two
warm-up requests) whose wall time is the benchmark's; it reports requests per
second and the p50 and p99 latency of its requests in ``extra_info``.

Beside them, the runtime's own in-process call (``jaxport.load_iree``, no
server) at b = 1 and b = 32: the report compares the server's p50 at one
client with the b = 1 call (goal: at most 1 ms more), and the batched
requests per second at 32 clients with the ideal gain, the b = 32 over b = 1
throughput of the runtime itself (goal: at least half of it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from pytest_benchmark.fixture import BenchmarkFixture

import jaxport

from .models import FEATURES, GPT_TOKENS, LAYERS_POLY_2K, MlpFactory, gpt, gpt_params

SIZES = (1, 8, 32)
CLIENTS = (1, 8, 32)
#: Requests per client thread in one round, by model.
REQUESTS = {"MLP 2k": 200, "transformer": 8}
BATCHING = ("--batch", "predict", "--max-batch-size", "32", "--max-batch-delay-ms", "2")
CLIENT = """
import json, sys, threading, time
import numpy as np
import tritonclient.http as httpclient
url, clients, count, shape, dtype = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4]), \
    sys.argv[5]
x = np.ones(shape, dtype)
latencies, errors = [], []
barrier = threading.Barrier(clients + 1)
def client():
    c = httpclient.InferenceServerClient(url, network_timeout=600.0, connection_timeout=600.0)
    tensor = httpclient.InferInput("arg0", shape, "FP32" if dtype == "float32" else "INT32")
    tensor.set_data_from_numpy(x, binary_data=True)
    outputs = [httpclient.InferRequestedOutput("output_0", binary_data=True)]
    for _ in range(2):
        c.infer("predict", [tensor], outputs=outputs)
    barrier.wait()
    mine = []
    try:
        for _ in range(count):
            start = time.perf_counter()
            c.infer("predict", [tensor], outputs=outputs).as_numpy("output_0")
            mine.append(time.perf_counter() - start)
    except Exception as exc:
        errors.append(repr(exc))
    latencies.extend(mine)
threads = [threading.Thread(target=client) for _ in range(clients)]
for t in threads:
    t.start()
barrier.wait()
start = time.perf_counter()
for t in threads:
    t.join()
wall = time.perf_counter() - start
print(json.dumps({"rps": len(latencies) / wall, "p50_s": float(np.percentile(latencies, 50)),
                  "p99_s": float(np.percentile(latencies, 99)), "errors": errors[:3]}))
"""


@dataclass(frozen=True)
class Served:
    """A model's IREE directory, its one-row input, and its runtime's own call times."""

    name: str
    iree: Path
    row: np.ndarray
    call_b1_s: float
    call_b32_s: float


def _median_call(function: Any, x: np.ndarray, rounds: int) -> float:
    function(x)
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        function(x)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


@pytest.fixture(scope="module", params=["MLP 2k", "transformer"])
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Served:
    root = tmp_path_factory.mktemp("serve-bench")
    b, = jaxport.symbolic_shape("b")
    if request.param == "MLP 2k":
        fun = MlpFactory.with_layers(LAYERS_POLY_2K).make()
        exp = jaxport.export(jax.jit(fun))(jax.ShapeDtypeStruct((b, FEATURES), jnp.float32))
        jaxport.save_bundle(root / "bundle", {"predict": exp}, {}, without_params=["predict"])
        row = np.ones((1, FEATURES), np.float32)
    else:
        params = gpt_params()
        spec = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), params)
        exp = jaxport.export(jax.jit(gpt))(spec, jax.ShapeDtypeStruct((b, GPT_TOKENS), jnp.int32))
        jaxport.save_bundle(root / "bundle", {"predict": exp}, params)
        row = np.ones((1, GPT_TOKENS), np.int32)
    jaxport.to_iree(root / "bundle", root / "iree", dims={"predict": [{"b": s} for s in SIZES]})
    predict = jaxport.load_iree(root / "iree")["predict"]
    rounds = 50 if request.param == "MLP 2k" else 5
    return Served(request.param, root / "iree", row, _median_call(predict, row, rounds),
                  _median_call(predict, np.repeat(row, 32, axis=0), rounds))


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="module", params=["off", "on"])
def server(request: pytest.FixtureRequest, served: Served) -> Iterator[tuple[Served, str, str]]:
    port = _free_port()
    args = BATCHING if request.param == "on" else ()
    process = subprocess.Popen([sys.executable, "-m", "jaxport", "serve", str(served.iree), "--http-port",
                                str(port), "--grpc-port", str(_free_port()), *args],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while True:
        try:
            with urllib.request.urlopen(f"http://{url}/v2/health/ready", timeout=5) as response:
                if response.status == 200:
                    break
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("the server did not start")
        time.sleep(0.2)
    try:
        yield served, url, request.param
    finally:
        process.terminate()
        process.wait(60)


@pytest.mark.parametrize("clients", CLIENTS)
def test_requests_per_second_and_latency(benchmark: BenchmarkFixture, server: tuple[Served, str, str],
                                         clients: int) -> None:
    served, url, batching = server
    count = REQUESTS[served.name]
    benchmark.group = f"serving: {served.name}, {clients} clients, batching {batching}"
    results: list[dict[str, Any]] = []

    def run() -> None:
        done = subprocess.run([sys.executable, "-c", CLIENT, url, str(clients), str(count),
                               json.dumps(list(served.row.shape)), str(served.row.dtype)],
                              capture_output=True, text=True, timeout=1200, env=dict(os.environ))
        if done.returncode != 0:
            raise RuntimeError(done.stderr[-3000:])
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))

    benchmark.pedantic(run, rounds=1, iterations=1, warmup_rounds=0)
    result = results[-1]
    assert result["errors"] == [], result["errors"]
    benchmark.extra_info.update(kind="serving", role="serve", baseline="-", model=served.name, clients=clients,
                                batching=batching, rps=result["rps"], p50_s=result["p50_s"],
                                p99_s=result["p99_s"], call_b1_s=served.call_b1_s, call_b32_s=served.call_b32_s)
