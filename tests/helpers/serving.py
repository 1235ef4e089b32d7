"""``jaxport serve`` in a subprocess on 127.0.0.1, free ports, and tritonclient calls for the serving tests."""

from __future__ import annotations

import os
import pickle
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tritonclient.http as httpclient

HOST = "127.0.0.1"
#: What the tritonclient HTTP JSON path needs to reach KServe (see research/serving.md).
JSON = {"Content-Type": "application/json"}
#: How long a server may take to load and report ready.
START_TIMEOUT_S = 120.0


_MADE: dict[Path, tuple[Path, Path]] = {}


def shared_directories(factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """:func:`make_directories` once per test session (under its base temporary directory)."""
    base = factory.getbasetemp()
    if base not in _MADE:
        _MADE[base] = make_directories(factory.mktemp("serve"))
    return _MADE[base]


def make_directories(root: Path) -> tuple[Path, Path]:
    """A bundle with golden examples, and the IREE directory converted from it (``predict`` at b = 1, 4, 8;
    ``loss`` at b = 2)."""
    import jaxport
    from tests.helpers import iree_model as model

    ids1, ids2 = model.token_ids(1), model.token_ids(2)
    jaxport.save_bundle(root / "bundle", {**model.exported(), "double": double()}, model.make_params(),
                        without_params=["double"],
                        examples={"predict": [((ids1,), {})], "loss": [((ids2, ids2), {})]})
    jaxport.to_iree(root / "bundle", root / "iree", dims={"predict": [{"b": 1}, {"b": 4}, {"b": 8}],
                                                          "loss": [{"b": 2}], "double": [{"b": 2}]})
    return root / "bundle", root / "iree"


def double() -> Any:
    """``x * 2`` on ``bfloat16[b, 4]`` (served as FP32)."""
    import jax
    import jax.numpy as jnp

    import jaxport

    b, = jaxport.symbolic_shape("b")
    return jaxport.export(jax.jit(lambda x: x * 2))(jax.ShapeDtypeStruct((b, 4), jnp.bfloat16))


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Server:
    """A running ``jaxport serve``: its ports, its process and its log."""

    path: Path
    args: tuple[str, ...]
    log: Path
    http_port: int = field(default_factory=free_port)
    grpc_port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"{HOST}:{self.http_port}"

    def start(self) -> Server:
        """:meth:`launch`, then :meth:`wait_ready`."""
        self.launch()
        self.wait_ready()
        return self

    def launch(self) -> Server:
        """Starts the process, without waiting for it to listen or be ready."""
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        command = [sys.executable, "-m", "jaxport", "serve", str(self.path), "--host", HOST,
                   "--http-port", str(self.http_port), "--grpc-port", str(self.grpc_port), *self.args]
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        return self

    def wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        client = self.http()
        while time.monotonic() < deadline:
            assert self.process is not None and self.process.poll() is None, self.output()
            try:
                if client.is_server_ready():
                    return
            except Exception:  # noqa: BLE001 - not listening yet
                pass
            time.sleep(0.1)
        raise TimeoutError(f"the server did not get ready in {START_TIMEOUT_S} s:\n{self.output()}")

    def http(self, concurrency: int = 1) -> Any:
        return httpclient.InferenceServerClient(self.url, concurrency=concurrency, network_timeout=60.0,
                                                connection_timeout=60.0)

    def grpc(self, calls: list[dict[str, Any]]) -> list[Any]:
        """The answers to ``calls`` made with ``tritonclient.grpc`` from a child process (see grpc_child)."""
        return grpc_calls(self.grpc_port, calls)

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-5000:] if self.log.exists() else ""

    def metric(self, name: str, **labels: str) -> float:
        """A sample of ``/metrics`` (0 when absent)."""
        with urllib.request.urlopen(f"http://{self.url}/metrics", timeout=30) as response:
            text = response.read().decode()
        total = 0.0
        for line in text.splitlines():
            match = re.fullmatch(r"(\w+)(?:\{(.*)\})? (\S+)", line)
            if match is None or match.group(1) != name:
                continue
            found = dict(re.findall(r'(\w+)="([^"]*)"', match.group(2) or ""))
            if all(found.get(k) == v for k, v in labels.items()):
                total += float(match.group(3))
        return total

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60.0) -> int:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
            raise


def http_input(name: str, array: np.ndarray, *, binary: bool) -> Any:
    tensor = httpclient.InferInput(name, list(array.shape), _datatype(array))
    tensor.set_data_from_numpy(array, binary_data=binary)
    return tensor


def _datatype(array: np.ndarray) -> str:
    return {"float32": "FP32", "int32": "INT32", "int64": "INT64", "float64": "FP64"}[str(array.dtype)]


def infer_http(server: Server, model: str, inputs: dict[str, np.ndarray], outputs: list[str], *,
               binary: bool) -> dict[str, np.ndarray]:
    requested = [httpclient.InferRequestedOutput(n, binary_data=binary) for n in outputs]
    result = server.http().infer(model, [http_input(n, a, binary=binary) for n, a in inputs.items()],
                                 outputs=requested, headers=None if binary else JSON)
    return {n: result.as_numpy(n) for n in outputs}


def infer_grpc(server: Server, model: str, inputs: dict[str, np.ndarray], outputs: list[str]) -> dict[str, np.ndarray]:
    answer = server.grpc([{"op": "infer", "model": model, "inputs": inputs, "outputs": outputs}])[0]
    assert isinstance(answer, dict), answer
    return answer


def grpc_calls(port: int, calls: list[dict[str, Any]]) -> list[Any]:
    """Runs ``calls`` against the gRPC port in a child process.

    ``tritonclient.grpc`` and KServe register protobuf messages of one package
    (``inference``) in the default descriptor pool: one process cannot import
    both, and the test process may have imported jaxport's KServe adapter
    (the doctests do). Each call is ``{"op": "infer", "model", "inputs":
    {name: array}, "outputs": [names]}``, ``{"op": "metadata", "model"}`` or
    ``{"op": "ready"}``; each answer is the outputs by name, the metadata as
    JSON, the readiness, or the error as ``("error", status, message)``.
    """
    with tempfile.TemporaryDirectory(prefix="jaxport-grpc-") as tmp:
        request, answers = Path(tmp, "calls.pickle"), Path(tmp, "answers.pickle")
        request.write_bytes(pickle.dumps((f"{HOST}:{port}", calls)))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        done = subprocess.run([sys.executable, "-m", "tests.helpers.grpc_child", str(request), str(answers)],
                              capture_output=True, text=True, timeout=120, env=env)
        assert done.returncode == 0, done.stderr[-3000:]
        result: list[Any] = pickle.loads(answers.read_bytes())
        return result
