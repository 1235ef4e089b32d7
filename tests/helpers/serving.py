"""``jaxport serve`` in a subprocess on 127.0.0.1, free ports, and tritonclient calls for the serving tests."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

HOST = "127.0.0.1"
#: What the tritonclient HTTP JSON path needs to reach KServe (see research/serving.md).
JSON = {"Content-Type": "application/json"}
#: How long a server may take to load and report ready.
START_TIMEOUT_S = 120.0


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
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        command = [sys.executable, "-m", "jaxport", "serve", str(self.path), "--host", HOST,
                   "--http-port", str(self.http_port), "--grpc-port", str(self.grpc_port), *self.args]
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        self.wait_ready()
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

    def grpc(self) -> Any:
        return grpcclient.InferenceServerClient(f"{HOST}:{self.grpc_port}")

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


def grpc_input(name: str, array: np.ndarray) -> Any:
    tensor = grpcclient.InferInput(name, list(array.shape), _datatype(array))
    tensor.set_data_from_numpy(array)
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
    result = server.grpc().infer(model, [grpc_input(n, a) for n, a in inputs.items()],
                                 outputs=[grpcclient.InferRequestedOutput(n) for n in outputs])
    return {n: result.as_numpy(n) for n in outputs}
