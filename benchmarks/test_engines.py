"""The engines on one machine, one run: Ray Data and Beam rows per second against a plain loop, Ray Serve
requests per second against ``jaxport serve``.

Run in the engines' virtual environment (``make bench-engines``; the main one has neither Ray nor Beam and
skips it). One model: an MLP of three 128 x 128 layers over ``float32[b, 128]``, converted to ONNX (ONNX
Runtime, any ``b``). Rates, each measured once:

* batch scoring of ``ROWS`` rows in batches of ``BATCH``: a plain loop over the batches in this process
  (``load_batches``: the floor: the engines run the same call), Ray Data with 1 and 2 actors, Beam's
  ``RunInference`` on the DirectRunner's in-process engine (the FnApiRunner);
* online requests of one row (the Open Inference Protocol's JSON over HTTP, ``CLIENTS`` client threads in
  this process, each sending back to back for ``SECONDS``): Ray Serve with 1 and 2 replicas behind its proxy,
  and ``jaxport serve`` (KServe, one process, ``--batch predict``) on the same body.

The figures go to ``extra_info`` and are printed; nothing asserts on them.
"""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pytest_benchmark.fixture import BenchmarkFixture

import jaxport

ray = pytest.importorskip("ray", reason="Ray runs in the engines' venv: make bench-engines")
beam = pytest.importorskip("apache_beam", reason="Beam runs in the engines' venv: make bench-engines")

WIDTH, LAYERS = 128, 3
ROWS, BATCH = 20_000, 250
CLIENTS, SECONDS = 8, 4.0


def make_model(root: Path) -> Path:
    """The MLP as a bundle, converted to ONNX at ``root/onnx``."""
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(0)
    params = [(rng.normal(size=(WIDTH, WIDTH)) / np.sqrt(WIDTH)).astype(np.float32) for _ in range(LAYERS)]

    def predict(p: list[Any], x: Any) -> Any:
        for w in p:
            x = jnp.tanh(x @ w)
        return x

    b, = jaxport.symbolic_shape("b")
    exported = jaxport.export(jax.jit(predict))([jax.ShapeDtypeStruct(w.shape, jnp.float32) for w in params],
                                                jax.ShapeDtypeStruct((b, WIDTH), jnp.float32))
    jaxport.save_bundle(root / "bundle", {"predict": exported}, params)
    jaxport.to_onnx(root / "bundle", root / "onnx")
    return root / "onnx"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def rows_per_s(run: Callable[[], int]) -> float:
    start = time.perf_counter()
    count = run()
    return count / (time.perf_counter() - start)


def plain_loop(model: Path, x: Any) -> int:
    predict = jaxport.load_batches(model)["predict"]
    return sum(len(predict({"arg0": x[i:i + BATCH]})["output_0"]) for i in range(0, len(x), BATCH))


def ray_data(model: Path, x: Any, actors: int) -> int:
    import ray.data

    dataset = ray.data.from_numpy(x).map_batches(lambda b: {"arg0": b["data"]}, batch_format="numpy")
    scored = jaxport.ray_data_map(dataset, model, concurrency=actors, batch_size=BATCH, num_cpus=0.5)
    return sum(len(b["output_0"]) for b in scored.iter_batches(batch_size=BATCH, batch_format="numpy"))


def beam_run(model: Path, x: Any) -> int:
    from apache_beam.ml.inference.base import RunInference
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner

    from apache_beam.testing.util import assert_that, equal_to

    with beam.Pipeline(runner=FnApiRunner()) as p:
        counted = (p | beam.Create([{"arg0": row} for row in x])
                   | RunInference(jaxport.beam_model_handler(model, max_batch_size=BATCH))
                   | beam.combiners.Count.Globally())
        assert_that(counted, equal_to([len(x)]))
    return len(x)


def requests_per_s(url: str) -> float:
    """One-row infer requests from ``CLIENTS`` threads, back to back for ``SECONDS``; answered per second."""
    body = json.dumps({"inputs": [{"name": "arg0", "shape": [1, WIDTH], "datatype": "FP32",
                                   "data": [0.5] * WIDTH}]}).encode()
    done = [0] * CLIENTS

    def client(i: int) -> None:
        end = time.perf_counter() + SECONDS
        while time.perf_counter() < end:
            request = urllib.request.Request(url, body, {"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=30) as response:
                response.read()
            done[i] += 1

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(SECONDS + 60)
    return sum(done) / (time.perf_counter() - start)


def ray_serve_rate(model: Path, replicas: int) -> float:
    from ray import serve

    port = free_port()
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    try:
        serve.run(jaxport.ray_serve_app(model, num_replicas=replicas, ray_actor_options={"num_cpus": 0.5}),
                  name="bench", route_prefix="/")
        url = f"http://127.0.0.1:{port}/v2/models/predict/infer"
        requests_per_s(url)  # a first round warms the replicas up; the second is the figure
        return requests_per_s(url)
    finally:
        serve.shutdown()


def jaxport_serve_rate(model: Path, log: Path) -> float:
    http, grpc = free_port(), free_port()
    with log.open("w") as out:
        server = subprocess.Popen([sys.executable, "-m", "jaxport", "serve", str(model), "--http-port", str(http),
                                   "--grpc-port", str(grpc), "--batch", "predict"], stdout=out, stderr=out)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{http}/v2/health/ready", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.5)
        url = f"http://127.0.0.1:{http}/v2/models/predict/infer"
        requests_per_s(url)  # as for Ray Serve: the second round is the figure
        return requests_per_s(url)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(60)


def measure(root: Path) -> dict[str, float]:
    model = make_model(root)
    x = np.random.default_rng(1).normal(size=(ROWS, WIDTH)).astype(np.float32)
    figures = {"plain loop rows/s": rows_per_s(lambda: plain_loop(model, x)),
               "Beam DirectRunner (in-process) rows/s": rows_per_s(lambda: beam_run(model, x))}
    temp = tempfile.mkdtemp(prefix="jray-", dir="/tmp")
    ray.init(_node_ip_address="127.0.0.1", include_dashboard=False, num_cpus=2, _temp_dir=temp, log_to_driver=False)
    try:
        for actors in (1, 2):
            figures[f"Ray Data, {actors} actor(s) rows/s"] = rows_per_s(lambda: ray_data(model, x, actors))
        for replicas in (1, 2):
            figures[f"Ray Serve, {replicas} replica(s) requests/s"] = ray_serve_rate(model, replicas)
    finally:
        ray.shutdown()
        shutil.rmtree(temp, ignore_errors=True)
    figures["jaxport serve --batch requests/s"] = jaxport_serve_rate(model, root / "serve.log")
    return figures


def test_engines_one_run(benchmark: BenchmarkFixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # Ray writes ~/.ray
    figures: dict[str, float] = {}
    benchmark.pedantic(lambda: figures.update(measure(tmp_path)), rounds=1, iterations=1)
    benchmark.extra_info.update(figures)
    print()
    for name, value in figures.items():
        print(f"{name:45s} {value:10.1f}")
