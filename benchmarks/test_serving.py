"""``jaxport serve`` under load: requests per second and p50/p99 latency at 1, 8 and 32 clients.

Two models, the MLP of about 2,000 StableHLO operations over ``f32[b, 16]``
and the GPT-2-small-sized transformer of ``models.py`` over ``int32[b, 64]``
token ids, each exported once per session and converted once per session to
two directories: ``--to onnx`` (ONNX Runtime, any ``b``) and ``--to iree``
(modules compiled for b = 1, 2, 4, 8, 16 and 32, the sizes the batcher pads
a group to). Each directory is served by ``jaxport serve`` in a process of its
own, with batching off, then on (``--batch predict --max-batch-size 32
--max-batch-delay-ms 2``). Each round is a client process
(``tritonclient.http`` on 127.0.0.1, binary tensors, one thread per client,
each sending one-row requests back to back after two warm-up requests, until
it has sent ``REQUESTS`` or ``SECONDS`` have passed) whose wall time is the
benchmark's; it reports requests per second and the p50 and p99 latency of
its requests in ``extra_info``, with the requests per runtime call of the
round (from the server's ``/metrics``).

Beside them, the runtime's own in-process call (``jaxport.load_converted``,
no server) at b = 1 and b = 32, measured in the same run: the report compares
the server's p50 at one client with the b = 1 call (goal: at most 1 ms more),
and the batched requests per second at 32 clients with the ideal gain, the
b = 32 over b = 1 throughput of the runtime itself (goal: at least half of it).
"""

from __future__ import annotations

import json
import os
import re
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

#: The batch sizes IREE modules are compiled for: every size the batcher pads a group to.
SIZES = (1, 2, 4, 8, 16, 32)
CLIENTS = (1, 8, 32)
RUNTIMES = ("onnx", "iree")
#: The most requests per client thread in one round, and the most seconds a round sends for, by model.
REQUESTS = {"MLP 2k": 300, "transformer": 12}
SECONDS = {"MLP 2k": 2.0, "transformer": 4.0}
#: Rounds of the runtime's own call (median), by model.
CALL_ROUNDS = {"MLP 2k": 200, "transformer": 3}
BATCHING = ("--batch", "predict", "--max-batch-size", "32", "--max-batch-delay-ms", "2")
CLIENT = """
import json, sys, threading, time
import numpy as np
import tritonclient.http as httpclient
url, clients, count, seconds, shape, dtype = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \
    float(sys.argv[4]), json.loads(sys.argv[5]), sys.argv[6]
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
    stop = time.perf_counter() + seconds
    mine = []
    try:
        for _ in range(count):
            if time.perf_counter() > stop:
                break
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
print(json.dumps({"rps": len(latencies) / wall, "requests": len(latencies),
                  "p50_s": float(np.percentile(latencies, 50)),
                  "p99_s": float(np.percentile(latencies, 99)), "errors": errors[:3]}))
"""


@dataclass(frozen=True)
class Served:
    """A model's converted directory for one runtime, its one-row input, and its runtime's own call times."""

    name: str
    runtime: str
    directory: Path
    row: np.ndarray
    call_b1_s: float
    call_b32_s: float


def _median_calls(function: Any, xs: tuple[np.ndarray, ...], rounds: int) -> tuple[float, ...]:
    """The median time of ``function`` on each of ``xs``, called in turn (so that a burst of load on the
    shared machine falls on every size alike) after a warm-up call of each."""
    for x in xs:
        function(x)
    times: list[list[float]] = [[] for _ in xs]
    for _ in range(rounds):
        for x, mine in zip(xs, times):
            start = time.perf_counter()
            function(x)
            mine.append(time.perf_counter() - start)
    return tuple(float(np.median(t)) for t in times)


@pytest.fixture(scope="session")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, np.ndarray]]:
    """Each model's bundle, exported once per session, with its one-row input."""
    root = tmp_path_factory.mktemp("serve-bench")
    b, = jaxport.symbolic_shape("b")
    mlp = MlpFactory.with_layers(LAYERS_POLY_2K).make()
    exp = jaxport.export(jax.jit(mlp))(jax.ShapeDtypeStruct((b, FEATURES), jnp.float32))
    jaxport.save_bundle(root / "mlp", {"predict": exp}, {}, without_params=["predict"])
    params = gpt_params()
    spec = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), params)
    exp = jaxport.export(jax.jit(gpt))(spec, jax.ShapeDtypeStruct((b, GPT_TOKENS), jnp.int32))
    jaxport.save_bundle(root / "gpt", {"predict": exp}, params)
    return {"MLP 2k": (root / "mlp", np.ones((1, FEATURES), np.float32)),
            "transformer": (root / "gpt", np.ones((1, GPT_TOKENS), np.int32))}


@pytest.fixture(scope="module", params=[(m, r) for m in REQUESTS for r in RUNTIMES], ids=lambda p: f"{p[0]}-{p[1]}")
def served(request: pytest.FixtureRequest, bundles: dict[str, tuple[Path, np.ndarray]]) -> Served:
    """The model converted for the runtime, once per session (pytest may set this fixture up twice)."""
    name, runtime = request.param
    if (name, runtime) not in _CONVERTED:
        _CONVERTED[name, runtime] = _convert(name, runtime, *bundles[name])
    return _CONVERTED[name, runtime]


_CONVERTED: dict[tuple[str, str], Served] = {}


def _convert(name: str, runtime: str, bundle: Path, row: np.ndarray) -> Served:
    directory = bundle.parent / f"{bundle.name}-{runtime}"
    if runtime == "iree":
        jaxport.to_iree(bundle, directory, dims={"predict": [{"b": s} for s in SIZES]})
    else:
        jaxport.to_onnx(bundle, directory)
    predict = jaxport.load_converted(directory)["predict"]
    call_b1_s, call_b32_s = _median_calls(predict, (row, np.repeat(row, 32, axis=0)), CALL_ROUNDS[name])
    return Served(name, runtime, directory, row, call_b1_s, call_b32_s)


def _counts(url: str) -> tuple[float, float]:
    """The server's ``predict`` requests answered and runtime calls so far (``/metrics``)."""
    with urllib.request.urlopen(f"http://{url}/metrics", timeout=30) as response:
        text = response.read().decode()
    totals = {"jaxport_requests_total": 0.0, "jaxport_calls_total": 0.0}
    for line in text.splitlines():
        match = re.fullmatch(r"(\w+)\{(.*)\} (\S+)", line)
        if match is not None and match.group(1) in totals and 'function="predict"' in match.group(2):
            totals[match.group(1)] += float(match.group(3))
    return totals["jaxport_requests_total"], totals["jaxport_calls_total"]


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
    process = subprocess.Popen([sys.executable, "-m", "jaxport", "serve", str(served.directory), "--http-port",
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
    benchmark.group = f"serving: {served.name}, {served.runtime}, {clients} clients, batching {batching}"
    results: list[dict[str, Any]] = []

    before = _counts(url)

    def run() -> None:
        done = subprocess.run([sys.executable, "-c", CLIENT, url, str(clients), str(count),
                               str(SECONDS[served.name]), json.dumps(list(served.row.shape)), str(served.row.dtype)],
                              capture_output=True, text=True, timeout=300, env=dict(os.environ))
        if done.returncode != 0:
            raise RuntimeError(done.stderr[-3000:])
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))

    benchmark.pedantic(run, rounds=1, iterations=1, warmup_rounds=0)
    result = results[-1]
    assert result["errors"] == [], result["errors"]
    after = _counts(url)
    calls = after[1] - before[1]
    benchmark.extra_info.update(kind="serving", role="serve", baseline="-", model=served.name,
                                runtime=served.runtime, clients=clients, batching=batching,
                                requests=result["requests"], rps=result["rps"], p50_s=result["p50_s"],
                                p99_s=result["p99_s"],
                                requests_per_call=(after[0] - before[0]) / calls if calls else None,
                                call_b1_s=served.call_b1_s, call_b32_s=served.call_b32_s)
