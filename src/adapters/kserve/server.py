"""The Open Inference Protocol ("KServe v2") over REST and gRPC, with KServe's protocol stack.

KServe's Python SDK brings the protocol: its ``DataPlane`` (model registry,
metadata, readiness, decoding and encoding of requests), its v2 REST
endpoints and its gRPC ``InferenceServicer``. Its ``ModelServer`` does not
fit a command that serves a directory, so this module builds the servers
itself:

* it binds the host it is given (``ModelServer`` binds ``0.0.0.0`` and ``[::]``);
* it listens before the functions are loaded and answers not-ready until they
  are and their golden examples passed (``ModelServer`` registers only models
  already ready);
* KServe parses ``sys.argv`` when it is imported: :mod:`jaxport.adapters.kserve.model`
  imports it first, with an empty command line, so that ``jaxport serve``'s
  options never reach it;
* a request that does not match (malformed JSON too, which FastAPI answers
  with 422, and a body over the limit, which KServe does not limit) gets HTTP
  400 / gRPC ``INVALID_ARGUMENT`` with jaxport's message; an unknown model
  404 / ``NOT_FOUND``;
* one process, one event loop: calls run on one thread per function
  (KServe's REST workers would pickle the models, and IREE's and ONNX
  Runtime's sessions do not pickle);
* SIGTERM (and SIGINT) stop it gracefully: readiness turns false, waiting
  batches run at once, both servers stop accepting and finish what they hold.

gRPC outputs are always raw (``raw_output_contents``): ``tritonclient.grpc``
reads no other.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import math
import signal
import socket
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from jaxport.domain.serving.generative import GenerativeModel
from jaxport.domain.errors import CallError
from jaxport.domain.serving.options import ServeOptions
from jaxport.domain.serving.protocol import ServedFunction, batch_variable
from .batcher import AsyncioBatcher, BatchReport
from .metrics import ServingMetrics

from .model import FunctionModel, Refused, too_large  # first: it imports KServe with an empty sys.argv
from .generation_metrics import generation_metrics
from .openai_routes import PREFIX as OPENAI_PREFIX, OpenAIRoutes
from .relay import Relay

import grpc
import uvicorn
from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from kserve.constants.constants import INFERENCE_CONTENT_LENGTH_HEADER
from kserve.errors import InvalidInput, ModelNotFound, ModelNotReady, ServerNotReady
from kserve.model_repository import ModelRepository
from kserve.protocol.dataplane import DataPlane
from kserve.protocol.grpc import grpc_predict_v2_pb2_grpc
from kserve.protocol.grpc.interceptors import ExceptionToStatusInterceptor
from kserve.protocol.grpc.servicer import InferenceServicer
from kserve.protocol.model_repository_extension import ModelRepositoryExtension
from kserve.protocol.rest.server import metrics_handler
from kserve.protocol.rest.v2_endpoints import register_v2_endpoints

logger = logging.getLogger("jaxport.serve")

#: What gRPC itself accepts beyond ``max_request_bytes`` (a larger message is refused by gRPC
#: with RESOURCE_EXHAUSTED before jaxport sees it; one up to this size gets INVALID_ARGUMENT).
GRPC_SLACK_BYTES = 1024 * 1024


class _State:
    """Whether every function is loaded and checked (the server's readiness)."""

    ready = False


class _DataPlane(DataPlane):  # type: ignore[misc]
    """KServe's data plane, ready only once every function is (KServe's says ready always)."""

    def __init__(self, registry: Any, state: _State) -> None:
        super().__init__(model_registry=registry)
        self._state = state

    async def ready(self) -> bool:
        return self._state.ready

    def decode_inference_request(self, body: Any, headers: Any, model_name: str) -> Any:
        """KServe's decoding; a body that is not JSON and not the binary extension says which header it lacks."""
        if isinstance(body, bytes) and INFERENCE_CONTENT_LENGTH_HEADER not in headers:
            raise InvalidInput(f"The request body was not read as JSON: send the header 'Content-Type: "
                               f"application/json' (or, for binary data, '{INFERENCE_CONTENT_LENGTH_HEADER}')")
        return super().decode_inference_request(body, headers, model_name)

    async def model_metadata(self, model_name: str) -> dict[str, Any]:
        """KServe's metadata, with a ``description``: the signature and its constraints (``t <= 128``)."""
        metadata: dict[str, Any] = await super().model_metadata(model_name)
        model = self.get_model_from_registry(model_name)
        if isinstance(model, FunctionModel):
            metadata["description"] = model.function.description
        return metadata


class _StatusInterceptor(ExceptionToStatusInterceptor):  # type: ignore[misc]
    """KServe's mapping of errors to gRPC status codes, with one log line per refusal (not a traceback)."""

    def __init__(self, metrics: ServingMetrics) -> None:
        super().__init__()
        self._metrics = metrics

    async def handle_exception(self, ex: Exception, request: Any, context: Any, method_name: str) -> None:
        if isinstance(ex, InvalidInput):
            reason = str(ex.reason) if isinstance(ex, Refused) else self._metrics.refused(
                getattr(request, "model_name", ""), ex, kind="InvalidInput")
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, reason)
        elif isinstance(ex, ModelNotFound):
            await context.abort(grpc.StatusCode.NOT_FOUND, ex.reason)
        else:
            await super().handle_exception(ex, request, context, method_name)


class _GrpcServicer(InferenceServicer):  # type: ignore[misc]
    """KServe's servicer, refusing a message over the limit with INVALID_ARGUMENT."""

    def __init__(self, dataplane: Any, extension: Any, max_bytes: int, metrics: ServingMetrics) -> None:
        super().__init__(dataplane, extension)
        self._max_bytes = max_bytes
        self._metrics = metrics

    async def ModelInfer(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC's name
        size = request.ByteSize()
        if size > self._max_bytes:
            raise Refused(self._metrics.refused(request.model_name, too_large(size, self._max_bytes),
                                                 kind="RequestTooLarge"))
        return await super().ModelInfer(request, context)


class _BodyLimit:
    """ASGI middleware: a request body over ``limit`` bytes (under OpenAI's routes, over ``openai_limit`` too)
    gets 400 before anything parses it."""

    def __init__(self, app: Any, limit: int, openai_limit: int, metrics: ServingMetrics) -> None:
        self.app, self.limits, self.metrics = app, (limit, min(limit, openai_limit)), metrics
        self._openai_option = "--max-openai-request-bytes" if openai_limit < limit else "--max-request-bytes"

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        openai = scope.get("path", "").startswith(OPENAI_PREFIX)
        limit = self.limits[openai]
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await self._refuse(scope, send, int(declared), openai)
            return
        chunks, total, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, _replay([message], receive), send)
                return
            chunks.append(message.get("body", b""))
            total += len(chunks[-1])
            more = message.get("more_body", False)
            if total > limit:
                await self._refuse(scope, send, None, openai)
                return
        body = {"type": "http.request", "body": b"".join(chunks), "more_body": False}
        await self.app(scope, _replay([body], receive), send)

    async def _refuse(self, scope: Any, send: Any, size: int | None, openai: bool) -> None:
        option = self._openai_option if openai else "--max-request-bytes"
        message = self.metrics.refused(_model_of(scope.get("path", "")), too_large(size, self.limits[openai], option),
                                      kind="RequestTooLarge")
        error: Any = message
        if openai:  # OpenAI's error shape there
            error = {"message": message, "type": "invalid_request_error", "param": None, "code": 400}
        await JSONResponse(status_code=400, content={"error": error})(scope, _replay([]), send)


class _Origins:
    """ASGI middleware: a request whose ``Origin`` (a web page of another site: the browser says which)
    is not among ``allowed`` gets 403, a CORS preflight too, before anything reads it. Requests without an
    ``Origin`` (clients that are not browsers) pass; the allowed origins pass to Starlette's CORS middleware,
    which answers their preflights and adds the headers that let their pages read the answers."""

    def __init__(self, app: Any, allowed: tuple[str, ...], metrics: ServingMetrics) -> None:
        self.app, self.allowed, self.metrics = app, allowed, metrics
        if allowed:
            from starlette.middleware.cors import CORSMiddleware

            self.app = CORSMiddleware(app, allow_origins=list(allowed), allow_methods=["GET", "POST"],
                                      allow_headers=["*"], max_age=600)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        origin = dict(scope["headers"]).get(b"origin") if scope["type"] == "http" else None
        if origin is None or "*" in self.allowed or origin.decode("latin-1") in self.allowed:
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        message = self.metrics.refused(_model_of(path), CallError(
            f"Requests from the web origin '{origin.decode('latin-1')}' are refused: the server admits none "
            f"but those that jaxport serve --allow-origin names"), kind="ForbiddenOrigin")
        error: Any = message
        if path.startswith(OPENAI_PREFIX):
            error = {"message": message, "type": "invalid_request_error", "param": None, "code": "forbidden_origin"}
        await JSONResponse(status_code=403, content={"error": error})(scope, _replay([]), send)


def _replay(messages: list[dict[str, Any]], receive: Any = None) -> Callable[[], Any]:
    """An ASGI ``receive`` that gives ``messages`` first, then what ``receive`` gives (a disconnect without one)."""
    pending = list(messages)

    async def replay() -> dict[str, Any]:
        if pending:
            return pending.pop(0)
        if receive is not None:
            message: dict[str, Any] = await receive()
            return message
        return {"type": "http.disconnect"}

    return replay


def _model_of(path: str) -> str:
    """The model named by a v2 path (``/v2/models/NAME/infer``), or ``""``."""
    parts = path.strip("/").split("/")
    return parts[2] if len(parts) > 2 and parts[:2] == ["v2", "models"] else ""


def _app(dataplane: Any, extension: Any, metrics: ServingMetrics) -> FastAPI:
    """KServe's v2 routes and metrics, with errors answered as the protocol says (400, 404, 503)."""
    app = FastAPI(title="jaxport serve", docs_url=None, redoc_url=None, openapi_url=None)
    app.add_api_route("/metrics", metrics_handler, methods=["GET"])

    async def metadata(model_name: str) -> Response:  # KServe's route drops the description
        return JSONResponse(await dataplane.model_metadata(model_name))

    app.add_api_route("/v2/models/{model_name}", metadata, methods=["GET"])
    register_v2_endpoints(app, dataplane, extension)

    def error(status: int) -> Callable[[Request, Exception], Any]:
        async def handle(request: Request, exc: Exception) -> Response:
            return JSONResponse(status_code=status, content={"error": str(exc)})
        return handle

    async def malformed(request: Request, exc: Exception) -> Response:
        details = "; ".join(f"{'/'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg', '')}"
                            for e in getattr(exc, "errors", lambda: [])())
        bad = CallError(f"The request body is not an inference request: {details or exc}")
        message = metrics.refused(request.path_params.get("model_name", ""), bad, kind="MalformedRequest")
        return JSONResponse(status_code=400, content={"error": message})

    async def internal(request: Request, exc: Exception) -> Response:
        logger.error("a request to %r failed", request.path_params.get("model_name", ""), exc_info=exc)
        return JSONResponse(status_code=500, content={"error": f"{type(exc).__name__}: {exc}"})

    app.add_exception_handler(RequestValidationError, malformed)
    async def invalid(request: Request, exc: Exception) -> Response:
        message = str(exc) if isinstance(exc, Refused) else metrics.refused(
            request.path_params.get("model_name", ""), exc, kind="InvalidInput")
        return JSONResponse(status_code=400, content={"error": message})

    app.add_exception_handler(InvalidInput, invalid)
    app.add_exception_handler(ModelNotFound, error(404))
    app.add_exception_handler(ModelNotReady, error(503))
    app.add_exception_handler(ServerNotReady, error(503))
    app.add_exception_handler(Exception, internal)
    return app


class _Uvicorn(uvicorn.Server):
    """Uvicorn, leaving signals to :class:`KServeServer` (which drains batches and gRPC too)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port``.

    Raises:
        OSError: the address cannot be bound (in use, not this machine's).
    """
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock


class KServeServer:
    """Serves functions over REST and gRPC until SIGTERM or SIGINT (or :meth:`stop`).

    Args:
        options: where to listen, which functions to batch, the limits.
        metrics: jaxport's counters (KServe's are in the same registry).

    Attributes:
        http_port, grpc_port: the ports, those bound once :meth:`run` listens (an option of 0: a free one).
    """

    def __init__(self, options: ServeOptions, metrics: ServingMetrics) -> None:
        self.options = options
        self.metrics = metrics
        self._state = _State()
        self._stop = asyncio.Event()
        self._batchers: list[AsyncioBatcher] = []
        self._executors: list[concurrent.futures.ThreadPoolExecutor] = []
        self._generative: GenerativeModel | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._relay: Relay | None = None
        self._stopping = False
        self.http_port = options.http_port
        self.grpc_port = options.grpc_port

    def run(self, load: Callable[[], Sequence[ServedFunction]],
            generative: Callable[[], GenerativeModel] | None = None) -> None:
        """Listens, loads the functions (``load``, on a thread) and the generative model (``generative``:
        OpenAI's endpoints under ``/openai/v1``), serves them until told to stop.

        Raises:
            OSError: a port cannot be bound.
            JaxportError: ``load`` or ``generative`` refused the directory or an option (the servers stop first).
        """
        asyncio.run(self._main(load, generative))

    def stop(self) -> None:
        """Stops the server as SIGTERM does, from any thread (one that runs it elsewhere than on the main
        thread, where no signal reaches it); returns at once, :meth:`run` when the server stopped."""
        self._stopping = True
        loop = self._loop
        if loop is not None:
            loop.call_soon_threadsafe(self._stop.set)

    async def _main(self, load: Callable[[], Sequence[ServedFunction]],
                    generative: Callable[[], GenerativeModel] | None) -> None:
        self._loop = asyncio.get_running_loop()
        if self._stopping:  # stop() came before the loop ran
            self._stop.set()
        options = self.options
        registry = ModelRepository()
        dataplane = _DataPlane(registry, self._state)
        extension = ModelRepositoryExtension(model_registry=registry)
        http_socket = _bind(options.host, options.http_port)
        self.http_port = http_socket.getsockname()[1]
        routes = _app(dataplane, extension, self.metrics)
        if generative is not None:
            self._relay = Relay(asyncio.get_running_loop())
            OpenAIRoutes(lambda: self._generative, self.metrics, generation_metrics(), self._relay).mount(routes)
        app = _Origins(_BodyLimit(routes, options.max_request_bytes, options.max_openai_request_bytes, self.metrics),
                       options.allow_origins, self.metrics)
        http = _Uvicorn(uvicorn.Config(app, log_config=None, access_log=False, lifespan="off",
                                       timeout_graceful_shutdown=math.ceil(options.drain_seconds) + 5))
        rpc = grpc.aio.server(interceptors=(_StatusInterceptor(self.metrics),), options=[
            ("grpc.max_receive_message_length", options.max_request_bytes + GRPC_SLACK_BYTES),
            ("grpc.max_send_message_length", -1)])
        grpc_predict_v2_pb2_grpc.add_GRPCInferenceServiceServicer_to_server(
            _GrpcServicer(dataplane, extension, options.max_request_bytes, self.metrics), rpc)
        host = f"[{options.host}]" if ":" in options.host else options.host
        self.grpc_port = rpc.add_insecure_port(f"{host}:{options.grpc_port}")
        if self.grpc_port == 0:
            http_socket.close()
            raise OSError(f"Cannot bind the gRPC server to {options.host}:{options.grpc_port}")
        await rpc.start()
        serving = asyncio.get_running_loop().create_task(http.serve(sockets=[http_socket]))
        self._handle_signals()
        logger.info("listening on %s: REST port %d, gRPC port %d (not ready until loaded)",
                    options.host, self.http_port, self.grpc_port)
        try:
            for function in await asyncio.to_thread(load):
                registry.update(FunctionModel(function, self._runner(function), self.metrics))
            if generative is not None:
                self._generative = self._watched(await asyncio.to_thread(generative))
            self._state.ready = not self._stop.is_set()
            if self._state.ready:
                logger.info("ready: %s", ", ".join(registry.get_models()))
            await asyncio.wait([serving, asyncio.ensure_future(self._stop.wait())],
                               return_when=asyncio.FIRST_COMPLETED)
        finally:
            await self._shutdown(http, rpc, serving)

    def _watched(self, model: GenerativeModel) -> GenerativeModel:
        """``model``, its scheduler's gauges read at each scrape; says how it runs requests."""
        stats = model.scheduler.stats
        generation_metrics().watch(model.name, lambda: stats().running, lambda: stats().queued)
        how = model.scheduling.sentence() if model.scheduling is not None else \
            "continuous batching" if model.scheduler.continuous else "one request at a time"
        logger.info("OpenAI endpoints at %s for the model %r: %s, at most %d waiting", OPENAI_PREFIX, model.name,
                    how, self.options.max_queue)
        return model

    def _runner(self, function: ServedFunction) -> Callable[[list[Any]], Any]:
        executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=f"jaxport-{function.name}")
        self._executors.append(executor)
        metrics = self.metrics
        if function.name not in self.options.batch:
            async def run(leaves: list[Any]) -> Any:
                results = await asyncio.get_running_loop().run_in_executor(executor, function.run, leaves)
                metrics.ran(BatchReport(function.name, 1, int(_rows(leaves)), 0), batched=False)
                return results
            return run
        variable = batch_variable(function.wire)
        batcher = AsyncioBatcher(function, variable, executor, self.options.max_batch_size,
                                 self.options.max_batch_delay_ms / 1000,
                                 lambda report: metrics.ran(report, batched=True))
        self._batchers.append(batcher)

        async def joined(leaves: list[Any]) -> Any:
            metrics.waiting(function.name, batcher.waiting_rows + int(leaves[0].shape[0]))
            try:
                return await batcher.submit(leaves)
            finally:
                metrics.waiting(function.name, batcher.waiting_rows)
        return joined

    def _handle_signals(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                loop.add_signal_handler(sig, self._stop.set)
            except (NotImplementedError, RuntimeError, ValueError):  # not the main thread
                return

    async def _shutdown(self, http: Any, rpc: Any, serving: asyncio.Task[None]) -> None:
        """Not ready; waiting batches run now; both servers stop accepting and finish what they hold."""
        self._state.ready = False
        logger.info("stopping: finishing the requests in flight")
        http.should_exit = True
        drains = [] if self._generative is None else [
            asyncio.to_thread(self._generative.scheduler.close, self.options.drain_seconds)]
        await asyncio.gather(rpc.stop(grace=30), *(b.drain() for b in self._batchers), *drains, serving,
                             return_exceptions=True)
        for executor in self._executors:
            executor.shutdown(wait=True)
        if self._relay is not None:  # after the scheduler: its worker wakes no one any more
            self._relay.close()
        logger.info("stopped")


def _rows(leaves: Sequence[Any]) -> int:
    """A request's rows for the metrics: the first input's leading dimension (1 for a scalar)."""
    shape = np.shape(leaves[0]) if leaves else ()
    return int(shape[0]) if shape else 1
