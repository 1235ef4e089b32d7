"""jaxport's own Prometheus metrics of a server, beside KServe's (one registry, one ``/metrics``).

* ``jaxport_calls_total{function, batched}``: runtime calls (a joined call counts once);
* ``jaxport_requests_total{function}``: requests answered by a call;
* ``jaxport_batch_rows{function}``: real rows per joined call (histogram);
* ``jaxport_batch_requests{function}``: requests per joined call (histogram);
* ``jaxport_padding_rows_total{function}``: rows of padding added up to compiled sizes;
* ``jaxport_waiting_rows{function}``: rows the batcher holds now;
* ``jaxport_refused_requests_total{function, error}``: requests refused, by jaxport's error type.

Each refusal is also logged, one line with the function and the error type.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

from .batcher import BatchReport

logger = logging.getLogger("jaxport.serve")

_SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


@dataclass(frozen=True)
class ServingMetrics:
    """The counters, registered once per registry."""

    calls: Counter
    requests: Counter
    batch_rows: Histogram
    batch_requests: Histogram
    padding_rows: Counter
    waiting_rows: Gauge
    refusals: Counter

    def ran(self, report: BatchReport, *, batched: bool) -> None:
        """Counts one runtime call."""
        self.calls.labels(report.function, str(batched).lower()).inc()
        self.requests.labels(report.function).inc(report.requests)
        if batched:
            self.batch_rows.labels(report.function).observe(report.rows)
            self.batch_requests.labels(report.function).observe(report.requests)
            self.padding_rows.labels(report.function).inc(report.padding)

    def waiting(self, function: str, rows: int) -> None:
        """Sets the rows the batcher of ``function`` holds."""
        self.waiting_rows.labels(function).set(rows)

    def refused(self, function: str, error: Exception, *, kind: str | None = None) -> str:
        """Counts and logs a refused request; returns the message for the client (``Type: message``).

        ``kind`` labels the refusal where the error's type says too little
        (``RequestTooLarge``, ``MalformedRequest``); else it is the error's type.
        """
        kind = kind or type(error).__name__
        self.refusals.labels(function, kind).inc()
        message = f"{type(error).__name__}: {error}"
        logger.warning("refused a request to %r (%s): %s", function, kind, " ".join(message.split())[:500])
        return message


@functools.cache
def serving_metrics(registry: CollectorRegistry = REGISTRY) -> ServingMetrics:
    """The metrics, registered in ``registry`` on first use."""
    return ServingMetrics(
        Counter("jaxport_calls", "Runtime calls", ["function", "batched"], registry=registry),
        Counter("jaxport_requests", "Requests answered", ["function"], registry=registry),
        Histogram("jaxport_batch_rows", "Real rows per joined call", ["function"], buckets=_SIZES,
                  registry=registry),
        Histogram("jaxport_batch_requests", "Requests per joined call", ["function"], buckets=_SIZES,
                  registry=registry),
        Counter("jaxport_padding_rows", "Padding rows added up to compiled sizes", ["function"],
                registry=registry),
        Gauge("jaxport_waiting_rows", "Rows waiting in the batcher", ["function"], registry=registry),
        Counter("jaxport_refused_requests", "Requests refused", ["function", "error"], registry=registry),
    )
