"""A jaxport directory as a Ray Serve deployment: replicas, ``@serve.batch``, HTTP and ``DeploymentHandle``.

Each replica loads the directory once (its constructor runs the golden
examples, so Serve counts a replica ready only after they passed on it) and
serves every function of it:

* over Ray Serve's HTTP proxy, with the Open Inference Protocol's JSON:
  ``POST .../v2/models/NAME/infer`` (the body ``jaxport serve`` takes),
  ``GET .../v2/models/NAME`` (metadata), ``GET .../v2/health/ready``: 200 once
  the replicas the application was started with (``num_replicas``, or the
  autoscaling config's ``min_replicas``) are running, each having passed its
  golden examples (Serve's status says how many run), else 503; once ready, a
  replica stays so (one added later, which Serve routes to only once its
  constructor passed, does not turn readiness off);
* through a ``DeploymentHandle``: ``handle.infer.remote(NAME, {wire name: array})``
  gives the results by wire name.

A request to a function whose inputs and outputs lead with one batch
dimension is checked alone first (a bad one gets its own error, HTTP 400
with ``Type: message``), then waits in the function's ``serve.batch``
queue: ``max_batch_size`` counts rows, not requests; the joined batch runs
on a thread, through the batch interface (split and padded onto compiled
sizes), and each request gets its rows back. A function without a batch
dimension, or a request of more rows than ``max_batch_size``, runs alone.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ray import serve
from starlette.requests import Request
from starlette.responses import JSONResponse

import jaxport.errors  # noqa: F401 - cloudpickle pickles an error's class by reference only where its module is loaded
from jaxport.domain.errors import CallError, JaxportError
from jaxport.domain.serving.batching import row_slices
from jaxport.domain.serving.engine_ports import BatchPort, LoadBatches
from jaxport.adapters.array_rows import join_rows
from .infer_json import read_inputs, rows_of, write_outputs

_INFER = re.compile(r"/v2/models/([^/]+)(?:/versions/[^/]+)?/infer$")
_METADATA = re.compile(r"/v2/models/([^/]+)(?:/versions/[^/]+)?$")


class JaxportDeployment:
    """One replica: a loaded directory, one ``serve.batch`` queue per function.

    Args:
        load: loads the directory's functions (and runs its golden examples).
        max_batch_size: the most rows that one joined call holds.
        batch_wait_timeout_s: how long the first waiting request waits for others.
        ready_replicas: the running replicas that make the application ready (those it was started with).
    """

    def __init__(self, load: LoadBatches, max_batch_size: int, batch_wait_timeout_s: float,
                 ready_replicas: int = 1) -> None:
        self.functions = dict(load())
        self._ready_replicas = ready_replicas
        self._ready = ready_replicas <= 1  # this replica runs once constructed
        self._max_batch_size = max_batch_size
        self._batched = {name: _batched(function, max_batch_size, batch_wait_timeout_s)
                         for name, function in self.functions.items() if function.batch_variable is not None}

    async def infer(self, function: str, batch: Mapping[str, Any]) -> dict[str, Any]:
        """The results of one request (wire input name -> array, the batch along axis 0), by wire name.

        Raises:
            CallError (and its subclasses): no such function, or the request does not match it.
        """
        target = self._function(function)
        target.check(batch)
        batched = self._batched.get(function)
        if batched is None or rows_of(batch) > self._max_batch_size:
            # No batch dimension, or more rows than a joined call holds (Serve's queue refuses those): alone.
            alone: dict[str, Any] = await asyncio.get_running_loop().run_in_executor(None, target, batch)
            return alone
        result: dict[str, Any] = await batched(dict(batch))
        return result

    async def __call__(self, request: Request) -> JSONResponse:
        """The HTTP routes of the Open Inference Protocol's JSON (see the module's docstring)."""
        path = request.url.path
        if request.method == "GET" and path.endswith("/v2/health/live"):
            return JSONResponse({"live": True})
        if request.method == "GET" and path.endswith("/v2/health/ready"):
            ready = await self._is_ready()
            return JSONResponse({"ready": ready}, status_code=200 if ready else 503)
        try:
            if request.method == "POST" and (match := _INFER.search(path)):
                name = match.group(1)
                function = self._function(name)
                body = await request.json()
                batch = read_inputs(name, function.inputs, body)
                results = await self.infer(name, batch)
                request_id = body.get("id") if isinstance(body, Mapping) else None
                return JSONResponse(write_outputs(name, function.outputs, results, request_id))
            if request.method == "GET" and (match := _METADATA.search(path)):
                function = self._function(match.group(1))
                return JSONResponse({"name": function.name, "platform": "jaxport",
                                     "inputs": [t.metadata() for t in function.inputs],
                                     "outputs": [t.metadata() for t in function.outputs]})
        except JaxportError as exc:
            return JSONResponse({"error": f"{type(exc).__name__}: {exc}"}, status_code=400)
        except ValueError as exc:  # the body is not JSON
            return JSONResponse({"error": f"MalformedRequest: {exc}"}, status_code=400)
        return JSONResponse({"error": f"No route {request.method} {path}"}, status_code=404)

    async def _is_ready(self) -> bool:
        """Whether the replicas the application was started with run (asked of Serve until they do)."""
        if not self._ready:
            running = await asyncio.get_running_loop().run_in_executor(None, _running_replicas)
            self._ready = running >= self._ready_replicas
        return self._ready

    def _function(self, name: str) -> BatchPort:
        try:
            return self.functions[name]
        except KeyError:
            raise CallError(f"No function '{name}' in this deployment; it serves {sorted(self.functions)}") from None


def _running_replicas() -> int:
    """How many replicas of this replica's deployment run (Serve's status; a replica runs once constructed)."""
    context = serve.get_replica_context()
    status = serve.status().applications[context.app_name].deployments[context.deployment]
    return int(status.replica_states.get("RUNNING", 0))  # its keys: Serve's ReplicaState, a str enum


def _batched(function: BatchPort, max_batch_size: int,
             batch_wait_timeout_s: float) -> Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]:
    """``function`` behind a ``serve.batch`` queue whose size counts rows."""

    async def jaxport_joined_call(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
        rows = [rows_of(r) for r in requests]
        joined = {t.name: join_rows([r[t.name] for r in requests], 0) for t in function.inputs}
        results = await asyncio.get_running_loop().run_in_executor(None, function, joined)
        return [{name: out[start:stop] for name, out in results.items()} for start, stop in row_slices(rows)]

    batched: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]] = serve.batch(
        max_batch_size=max_batch_size, batch_wait_timeout_s=batch_wait_timeout_s,
        batch_size_fn=lambda requests: sum(rows_of(r) for r in requests))(jaxport_joined_call)
    return batched


def deployment_app(load: LoadBatches, *, name: str, num_replicas: int | str | None, max_batch_size: int,
                   batch_wait_timeout_s: float, autoscaling_config: Mapping[str, Any] | None,
                   ray_actor_options: Mapping[str, Any] | None, max_ongoing_requests: int | None) -> Any:
    """The bound Ray Serve application (``serve.run(app, route_prefix=...)`` starts it).

    ``num_replicas`` and ``autoscaling_config`` are Serve's (one of them; ``"auto"``
    too), ``ray_actor_options`` each replica's resources (``{"num_cpus": 1}``).
    """
    options: dict[str, Any] = {"name": name}
    if autoscaling_config is not None:
        options["autoscaling_config"] = dict(autoscaling_config)
        ready = int(autoscaling_config.get("min_replicas", 1) or 1)
    else:
        options["num_replicas"] = num_replicas
        ready = num_replicas if isinstance(num_replicas, int) else 1
    if ray_actor_options is not None:
        options["ray_actor_options"] = dict(ray_actor_options)
    if max_ongoing_requests is not None:
        options["max_ongoing_requests"] = max_ongoing_requests
    return serve.deployment(JaxportDeployment, **options).bind(load, max_batch_size, batch_wait_timeout_s, ready)
