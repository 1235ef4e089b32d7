"""``jaxport serve DIR --engine ray --replicas 2``: the command joins the test's local Ray through
``RAY_ADDRESS``, serves the ONNX directory behind Serve's HTTP proxy (127.0.0.1, a free port) with two
replicas, answers the infer JSON of ``jaxport serve``, and on SIGTERM deletes its application and exits 0."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np

import jaxport
from tests.helpers import engine_models as model

#: How long the command may take to report ready, and to stop.
START_TIMEOUT_S, STOP_TIMEOUT_S = 180, 60


def get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status)
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return 0


def test_serve_engine_ray_runs_replicas_on_the_cluster_ray_address_names(local_ray: None, directories: Path,
                                                                          free_port: int, tmp_path: Path) -> None:
    import ray
    from ray import serve

    env = {**os.environ, "RAY_ADDRESS": ray.get_runtime_context().gcs_address}
    log = (tmp_path / "serve.log").open("w")
    command = subprocess.Popen([sys.executable, "-m", "jaxport", "serve", str(directories / "onnx"), "--engine",
                                "ray", "--replicas", "2", "--http-port", str(free_port)],
                               env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{free_port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        # The command logs this once serve.run returned: every replica passed its golden examples.
        while ("serving 'jaxport' on Ray Serve" not in (tmp_path / "serve.log").read_text()
               and command.poll() is None and time.monotonic() < deadline):
            time.sleep(1)
        assert get(f"{base}/v2/health/ready") == 200, (tmp_path / "serve.log").read_text()[-3000:]
        replicas = serve.status().applications["jaxport"].deployments["jaxport"].replica_states
        assert replicas == {"RUNNING": 2}
        x = model.rows(3)
        body = {"inputs": [{"name": "arg0", "shape": [3, 4], "datatype": "FP32", "data": x.reshape(-1).tolist()}]}
        request = urllib.request.Request(f"{base}/v2/models/predict/infer", json.dumps(body).encode(),
                                         {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            outputs = {o["name"]: np.asarray(o["data"], np.float32).reshape(o["shape"])
                       for o in json.loads(response.read())["outputs"]}
        want = jaxport.load_converted(directories / "onnx")["predict"](x)
        np.testing.assert_allclose(outputs["y"], want["y"], rtol=1e-5, atol=1e-6)
    finally:
        command.send_signal(signal.SIGTERM)
        code = command.wait(STOP_TIMEOUT_S)
        log.close()
    assert code == 0, (tmp_path / "serve.log").read_text()[-3000:]
    assert "jaxport" not in serve.status().applications
