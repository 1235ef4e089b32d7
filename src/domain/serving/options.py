"""How ``jaxport serve`` listens and joins requests: its options, their defaults and their checks.

Imports nothing beyond the errors, so that ``jaxport --help`` can show the defaults cheaply.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from jaxport.domain.errors import UsageError


#: The largest request body the server reads, unless told otherwise (64 MiB).
DEFAULT_MAX_REQUEST_BYTES = 64 * 1024 * 1024
#: The largest body of a request to OpenAI's routes, unless told otherwise (1 MiB): a prompt is text, and a
#: cache of 128k tokens at 4 bytes each holds half of it.
DEFAULT_MAX_OPENAI_REQUEST_BYTES = 1024 * 1024
#: The most rows a joined call holds, unless told otherwise.
DEFAULT_MAX_BATCH_SIZE = 32
#: How long the first waiting request of a batch waits for others, unless told otherwise.
DEFAULT_MAX_BATCH_DELAY_MS = 2.0
#: The most requests a generative model runs at once (the rows of its decode batch), unless told otherwise.
DEFAULT_MAX_SLOTS = 8
#: The most generation requests that wait for a slot, unless told otherwise.
DEFAULT_MAX_QUEUE = 64
#: How long SIGTERM lets running requests finish before it cancels them, unless told otherwise.
DEFAULT_DRAIN_SECONDS = 30.0


@dataclass(frozen=True, slots=True)
class ServeOptions:
    """How ``jaxport serve`` listens and joins requests.

    Attributes:
        host: the address both servers bind (``127.0.0.1``: this machine only;
            ``0.0.0.0`` in a container).
        http_port, grpc_port: the REST and gRPC ports (0: any free port).
        batch: the functions whose concurrent requests are joined into one call.
        max_batch_size: the most rows of one joined call.
        max_batch_delay_ms: how long a request waits for others to join it.
        max_request_bytes: the largest request body (REST) or message (gRPC) read.
        max_slots: a generative model's most requests at once (its decode batch).
        max_queue: the most generation requests waiting for a slot (more: refused, HTTP 429).
        drain_seconds: on SIGTERM, how long requests in flight may finish before they are cancelled.
        model_name: the name OpenAI's clients give a generative model (None: the directory's name).
        max_openai_request_bytes: the largest body read by OpenAI's routes (lower than ``max_request_bytes``'s
            default: their bodies are text).
        allow_origins: the web origins (``https://app.example``, or ``*``) whose pages may call the server
            (CORS); a request that carries another ``Origin`` gets HTTP 403. None by default.

    Raises:
        UsageError: a port, size, delay or limit is out of range, or two ports are one.
    """

    host: str = "127.0.0.1"
    http_port: int = 8080
    grpc_port: int = 8081
    batch: tuple[str, ...] = ()
    max_batch_size: int = DEFAULT_MAX_BATCH_SIZE
    max_batch_delay_ms: float = DEFAULT_MAX_BATCH_DELAY_MS
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    max_slots: int = DEFAULT_MAX_SLOTS
    max_queue: int = DEFAULT_MAX_QUEUE
    drain_seconds: float = DEFAULT_DRAIN_SECONDS
    model_name: str | None = None
    max_openai_request_bytes: int = DEFAULT_MAX_OPENAI_REQUEST_BYTES
    allow_origins: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name, port in (("http_port", self.http_port), ("grpc_port", self.grpc_port)):
            if not 0 <= port <= 65535:
                raise UsageError(f"{name} {port} is not a port number (0 to 65535)")
        if self.http_port == self.grpc_port != 0:
            raise UsageError(f"The REST and gRPC servers cannot share the port {self.http_port}")
        if self.max_batch_size < 1:
            raise UsageError(f"max_batch_size must be at least 1, not {self.max_batch_size}")
        if not 0 <= self.max_batch_delay_ms <= 60 * 60 * 1000:
            raise UsageError(f"max_batch_delay_ms must be between 0 and an hour, not {self.max_batch_delay_ms}")
        if self.max_request_bytes < 1024:
            raise UsageError(f"max_request_bytes must be at least 1024, not {self.max_request_bytes}")
        if self.max_openai_request_bytes < 1024:
            raise UsageError(f"max_openai_request_bytes must be at least 1024, not {self.max_openai_request_bytes}")
        bad = [o for o in self.allow_origins if o != "*" and not _is_origin(o)]
        if bad:
            raise UsageError(f"allow_origins must be origins such as https://app.example:8443 (a scheme, a host, "
                             f"a port; no path) or *, not {bad}")
        if self.max_slots < 1:
            raise UsageError(f"max_slots must be at least 1, not {self.max_slots}")
        if self.max_queue < 0:
            raise UsageError(f"max_queue must be at least 0, not {self.max_queue}")
        if not 0 <= self.drain_seconds <= 24 * 60 * 60:
            raise UsageError(f"drain_seconds must be between 0 and a day, not {self.drain_seconds}")
        if self.model_name is not None and not self.model_name.strip():
            raise UsageError("model_name is empty: give the name clients ask for, or leave it out")
        if not self.host:
            raise UsageError("host is empty: give an address to bind, such as 127.0.0.1")

    def check_batch(self, functions: Sequence[str]) -> None:
        """Checks that ``batch`` names only ``functions``.

        Raises:
            UsageError: naming the unknown functions and the known ones.
        """
        unknown = sorted(set(self.batch) - set(functions))
        if unknown:
            raise UsageError(f"--batch names functions that are not served: {unknown}; the functions "
                             f"are {sorted(functions)}")


def _is_origin(origin: str) -> bool:
    """Whether ``origin`` is what a browser sends as ``Origin``: ``scheme://host[:port]``, nothing after."""
    scheme, sep, rest = origin.partition("://")
    return bool(sep) and scheme in ("http", "https") and bool(rest) and not any(c in rest for c in "/?#@ ")
