"""``jaxport serve --engine ray``: an application run on the Ray cluster that ``RAY_ADDRESS`` names (or a
local one), its HTTP proxy on the given address, until SIGTERM or SIGINT."""

from __future__ import annotations

import logging
import os
import signal
import threading
from typing import Any

import ray
from ray import serve

logger = logging.getLogger(__name__)


def run_until_signalled(app: Any, *, name: str, host: str, http_port: int) -> None:
    """Runs ``app`` on Ray Serve (route ``/``) until SIGTERM or SIGINT, then takes it down.

    A cluster this process started (no ``RAY_ADDRESS``) is shut down with its Serve; on a cluster it joined,
    only the application is deleted (the cluster's Serve and its proxy stay for its other applications).
    """
    joined = bool(os.environ.get("RAY_ADDRESS"))
    if joined:
        ray.init()  # RAY_ADDRESS is the cluster to join
    else:  # a local cluster, on loopback only when the proxy is
        ray.init(include_dashboard=False, **({"_node_ip_address": host} if host == "127.0.0.1" else {}))
    stop = threading.Event()
    previous = {s: signal.signal(s, lambda *_: stop.set()) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        serve.start(http_options={"host": host, "port": http_port})
        serve.run(app, name=name, route_prefix="/")
        logger.info("serving %r on Ray Serve at http://%s:%d/ (cluster %s)", name, host, http_port,
                    os.environ.get("RAY_ADDRESS") or "local")
        stop.wait()
    finally:
        logger.info("stopping %r", name)
        if joined:
            serve.delete(name)
        else:
            serve.shutdown()
        ray.shutdown()
        for s, handler in previous.items():
            signal.signal(s, handler)
