"""Ray Serve: a bundle (on JAX) and its ONNX directory deployed on a local Ray, called through the
``DeploymentHandle`` and through Serve's HTTP proxy (on 127.0.0.1, a free port) with the Open Inference
Protocol's JSON; results equal to ``load_converted(...)(...)`` / the bundle's."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import jaxport
from jaxport.errors import BatchRowError, DtypeMismatchError, ShapeMismatchError
from tests.helpers import engine_models as model

#: Every call waits at most this long (a request loop never waits unbounded).
TIMEOUT_S = 60


@pytest.fixture(scope="module")
def served(local_ray: None, directories: Path, free_port: int) -> Iterator[tuple[dict[str, Any], int]]:
    """The ONNX directory at ``/onnx`` (2 replicas) and the bundle at ``/bundle`` (1), their handles and
    the proxy's port; Serve shut down after."""
    from ray import serve

    from jaxport.application.serving.engines import ray_serve_app

    serve.start(http_options={"host": "127.0.0.1", "port": free_port})
    try:
        handles = {name: serve.run(ray_serve_app(directories / name, num_replicas=replicas, max_batch_size=8,
                                                 ray_actor_options={"num_cpus": 0.25}),
                                   name=name, route_prefix=f"/{name}")
                   for name, replicas in (("onnx", 2), ("bundle", 1))}
        yield handles, free_port
    finally:
        serve.shutdown()


def reference(directories: Path, name: str, x: Any) -> dict[str, Any]:
    if name == "bundle":
        return model.expected(x)
    results: dict[str, Any] = jaxport.load_converted(directories / name)["predict"](x)
    return results


def infer_http(port: int, prefix: str, body: Any) -> tuple[int, Any]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/{prefix}/v2/models/predict/infer",
                                     json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.mark.parametrize("name", ["onnx", "bundle"])
def test_the_handle_gives_the_directorys_results(served: tuple[dict[str, Any], int], directories: Path,
                                                 name: str) -> None:
    x = model.rows(12)  # more rows than max_batch_size (8): run alone, not through Serve's batch queue
    got = served[0][name].infer.remote("predict", {"arg0": x}).result(timeout_s=TIMEOUT_S)
    want = reference(directories, name, x)
    assert sorted(got) == ["norm", "y"]
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-5, atol=1e-6)


def test_concurrent_requests_each_get_their_own_rows(served: tuple[dict[str, Any], int]) -> None:
    handle = served[0]["onnx"]
    inputs = [model.rows(1 + i % 3, seed=i) for i in range(12)]
    with ThreadPoolExecutor(6) as pool:
        results = list(pool.map(lambda x: handle.infer.remote("predict", {"arg0": x}).result(timeout_s=TIMEOUT_S),
                                inputs))
    for x, got in zip(inputs, results):
        np.testing.assert_allclose(got["y"], model.expected(x)["y"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["onnx", "bundle"])
def test_the_http_proxy_takes_the_infer_json_of_jaxport_serve(served: tuple[dict[str, Any], int],
                                                              directories: Path, name: str) -> None:
    x = model.rows(3)
    body = {"id": "r1", "inputs": [{"name": "arg0", "shape": [3, 4], "datatype": "FP32",
                                    "data": x.reshape(-1).tolist()}]}
    status, answer = infer_http(served[1], name, body)
    assert status == 200, answer
    assert answer["id"] == "r1" and answer["model_name"] == "predict"
    outputs = {o["name"]: np.asarray(o["data"], np.float32).reshape(o["shape"]) for o in answer["outputs"]}
    np.testing.assert_allclose(outputs["y"], reference(directories, name, x)["y"], rtol=1e-5, atol=1e-6)


def test_a_bad_request_gets_http_400_with_jaxports_error(served: tuple[dict[str, Any], int]) -> None:
    body = {"inputs": [{"name": "arg0", "shape": [1, 4], "datatype": "FP64", "data": [0.0] * 4}]}
    status, answer = infer_http(served[1], "onnx", body)
    assert status == 400
    assert answer["error"].startswith("DtypeMismatchError: Dtype mismatch for input 'arg0' (args[0]): "
                                      "expected FP32 and called with FP64")


def test_a_bad_row_fails_the_handle_call_with_a_ray_task_error_naming_its_index(
        served: tuple[dict[str, Any], int]) -> None:
    handle = served[0]["onnx"]
    ragged = np.empty(3, dtype=object)
    ragged[:] = [model.rows(1)[0], model.rows(1)[0][:3], model.rows(1)[0]]
    with pytest.raises(BatchRowError, match=r"Row 1 of the batch to 'predict' is refused: Shape mismatch") as caught:
        handle.infer.remote("predict", {"arg0": ragged}).result(timeout_s=TIMEOUT_S)
    assert type(caught.value).__name__ == "RayTaskError(BatchRowError)"
    with pytest.raises(ShapeMismatchError):
        handle.infer.remote("predict", {"arg0": model.rows(2)[:, :3]}).result(timeout_s=TIMEOUT_S)
    with pytest.raises(DtypeMismatchError):
        handle.infer.remote("predict", {"arg0": model.rows(2).astype(np.float64)}).result(timeout_s=TIMEOUT_S)
