"""``jaxport serve PATH``: serve a bundle or a converted directory over the Open Inference Protocol.

The command over :func:`jaxport.serve` (:mod:`jaxport.application.serving.service`)."""

from __future__ import annotations

import argparse
from typing import Any

from jaxport.domain.serving.options import (
    DEFAULT_DRAIN_SECONDS, DEFAULT_MAX_BATCH_DELAY_MS, DEFAULT_MAX_BATCH_SIZE, DEFAULT_MAX_OPENAI_REQUEST_BYTES,
    DEFAULT_MAX_QUEUE, DEFAULT_MAX_REQUEST_BYTES, DEFAULT_MAX_SLOTS
)


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Adds ``serve`` to ``commands``."""
    cmd = commands.add_parser(
        "serve", parents=[common],
        help="serve a bundle or a converted directory over the Open Inference Protocol (KServe v2)",
        description="Serve every function of the bundle or converted directory at PATH as one model "
                    "of the Open Inference Protocol (KServe v2), over REST and gRPC, with KServe's "
                    "protocol stack (pip install 'jaxport[serve]'). The servers report not ready until "
                    "every function is loaded and the directory's golden examples passed. A request "
                    "that does not match its function gets HTTP 400 / gRPC INVALID_ARGUMENT with "
                    "jaxport's message. SIGTERM drains: waiting batches run, requests in flight are "
                    "answered, then the command exits. bfloat16 travels as FP32. A generative bundle "
                    "or its conversion also gets OpenAI's completions and chat completions under "
                    "/openai/v1 (streamed as server-sent events with stream=true).")
    cmd.add_argument("path", metavar="PATH", help="a bundle, or a directory that jaxport converted "
                                                   "(any target: IREE, a SavedModel, ...)")
    cmd.add_argument("--host", default="127.0.0.1",
                     help="the address to bind (default 127.0.0.1; 0.0.0.0 in a container)")
    cmd.add_argument("--http-port", type=int, default=8080, help="the REST port (default 8080)")
    cmd.add_argument("--grpc-port", type=int, default=8081, help="the gRPC port (default 8081)")
    cmd.add_argument("--batch", action="append", default=[], metavar="FUNCTION",
                     help="join concurrent requests to FUNCTION into one call along its batch "
                          "dimension (repeat; each input and output must lead with one dimension variable)")
    cmd.add_argument("--max-batch-size", type=int, default=DEFAULT_MAX_BATCH_SIZE, metavar="B",
                     help=f"the most rows of a joined call (default {DEFAULT_MAX_BATCH_SIZE})")
    cmd.add_argument("--max-batch-delay-ms", type=float, default=DEFAULT_MAX_BATCH_DELAY_MS, metavar="D",
                     help=f"how long a request waits for others to join it (default {DEFAULT_MAX_BATCH_DELAY_MS})")
    cmd.add_argument("--max-request-bytes", type=int, default=DEFAULT_MAX_REQUEST_BYTES, metavar="N",
                     help=f"the largest request body, in bytes (default {DEFAULT_MAX_REQUEST_BYTES}, 64 MiB)")
    cmd.add_argument("--max-openai-request-bytes", type=int, default=DEFAULT_MAX_OPENAI_REQUEST_BYTES, metavar="N",
                     help=f"the largest request body under /openai/v1, in bytes (default "
                          f"{DEFAULT_MAX_OPENAI_REQUEST_BYTES}, 1 MiB)")
    cmd.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                     help="let the web pages of ORIGIN (https://app.example:8443, or *) call the server (CORS; "
                          "repeat); a request from any other web origin gets HTTP 403 (default: none)")
    cmd.add_argument("--max-slots", type=int, default=DEFAULT_MAX_SLOTS, metavar="N",
                     help="a generative model's most requests at once: the rows of its decode batch, which "
                          "requests join between steps (continuous batching) where the decode takes per-row "
                          "positions, every cache leaf has a batch axis and the runtime is JAX, ONNX Runtime or "
                          "TensorFlow; else (a decode that takes a mask, LiteRT, IREE) requests run one at a "
                          "time and --max-slots does not apply: the start's log and /openai/v1/models say "
                          f"which, and why (default {DEFAULT_MAX_SLOTS})")
    cmd.add_argument("--max-queue", type=int, default=DEFAULT_MAX_QUEUE, metavar="N",
                     help=f"the most generation requests waiting for a slot; more get HTTP 429 with "
                          f"Retry-After (default {DEFAULT_MAX_QUEUE})")
    cmd.add_argument("--drain-seconds", type=float, default=DEFAULT_DRAIN_SECONDS, metavar="S",
                     help="on SIGTERM, how long running generation requests may finish before they are "
                          f"cancelled (default {DEFAULT_DRAIN_SECONDS:g})")
    cmd.add_argument("--model-name", default=None, metavar="NAME",
                     help="the generative model's name in OpenAI's requests (default: the directory's name)")
    cmd.add_argument("--engine", choices=("kserve", "ray"), default="kserve",
                     help="kserve (default): this process serves REST and gRPC; ray: replicas on the Ray "
                          "cluster that RAY_ADDRESS names, or a local one, behind Ray Serve's HTTP proxy at "
                          "--host:--http-port (REST only; every function with a batch dimension joins "
                          "requests; pip install 'jaxport[ray]')")
    cmd.add_argument("--replicas", type=int, default=1, metavar="N",
                     help="with --engine ray: the replicas, each loading PATH and passing its golden examples "
                          "before it is ready (default 1)")
    cmd.set_defaults(handler=serve_directory)


def serve_directory(args: argparse.Namespace) -> int:
    """Serves until SIGTERM or SIGINT; 0 once drained."""
    import logging  # 2 ms that --help does not pay

    from jaxport.application.serving.service import serve  # the record's modules: not for --help

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.engine == "ray":
        from jaxport.application.serving.engines import serve_on_ray

        serve_on_ray(args.path, host=args.host, http_port=args.http_port, replicas=args.replicas,
                     max_batch_size=args.max_batch_size, batch_wait_timeout_s=args.max_batch_delay_ms / 1000)
        return 0
    serve(args.path, host=args.host, http_port=args.http_port, grpc_port=args.grpc_port, batch=args.batch,
          max_batch_size=args.max_batch_size, max_batch_delay_ms=args.max_batch_delay_ms,
          max_request_bytes=args.max_request_bytes, max_slots=args.max_slots, max_queue=args.max_queue,
          drain_seconds=args.drain_seconds, model_name=args.model_name,
          max_openai_request_bytes=args.max_openai_request_bytes, allow_origins=args.allow_origin)
    return 0
