"""Ray Serve's readiness: ``/v2/health/ready`` answers 503 while a replica the application was started with is
still starting (held in its constructor by :func:`tests.helpers.gated_load.gated_load`), 200 once it runs."""

from __future__ import annotations

import functools
import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np

from tests.helpers import engine_models as model
from tests.helpers import gated_load


def health(port: int) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/gated/v2/health/ready", timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        body = error.read()
        try:
            return error.code, json.loads(body)
        except ValueError:
            return error.code, body.decode(errors="replace")
    except OSError as error:
        return 0, str(error)


def until(port: int, wanted: Any, gate: Path | None = None) -> tuple[int, Any]:
    """Asks for readiness until a replica answers ``wanted`` (and ``gate`` exists), 1,200 times at most."""
    answer: tuple[int, Any] = (0, None)
    for _ in range(1200):
        answer = health(port)
        if answer[1] == wanted and (gate is None or gate.exists()):
            return answer
        time.sleep(0.1)
    raise AssertionError(f"the readiness never read {wanted}: the last answer {answer}")


def test_not_ready_while_a_replica_it_started_with_is_starting(local_ray: None, directories: Path,
                                                               free_port: int, tmp_path: Path) -> None:
    import ray.cloudpickle
    from ray import serve

    from jaxport.adapters.ray.serve_deployment import deployment_app

    ray.cloudpickle.register_pickle_by_value(gated_load)
    load = functools.partial(gated_load.gated_load, str(directories / "onnx"), str(tmp_path))
    app = deployment_app(load, name="gated", num_replicas=2, max_batch_size=8, batch_wait_timeout_s=0.002,
                         autoscaling_config=None, ray_actor_options={"num_cpus": 0.25}, max_ongoing_requests=None)
    serve.start(http_options={"host": "127.0.0.1", "port": free_port})
    try:
        handle = serve._run(app, name="gated", route_prefix="/gated", _blocking=False)  # noqa: SLF001 - not waiting
        # The first replica runs and answers; the second is held in its constructor.
        assert until(free_port, {"ready": False}, tmp_path / "waiting") == (503, {"ready": False})
        x = model.rows(2)
        got = handle.infer.remote("predict", {"arg0": x}).result(timeout_s=60)  # the running one takes requests
        np.testing.assert_allclose(got["y"], model.expected(x)["y"], rtol=1e-5, atol=1e-6)
        (tmp_path / "go").touch()
        assert until(free_port, {"ready": True}) == (200, {"ready": True})
    finally:
        serve.shutdown()
