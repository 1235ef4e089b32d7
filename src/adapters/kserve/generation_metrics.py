"""Prometheus metrics of generative serving, beside jaxport's and KServe's (one registry, one ``/metrics``).

* ``jaxport_time_to_first_token_seconds{model}``: from a request's arrival to its first token (histogram);
* ``jaxport_generated_tokens_total{model}``: tokens sent (its rate is the server's tokens per second);
* ``jaxport_request_tokens_per_second{model}``: each request's tokens per second after its first (histogram);
* ``jaxport_running_requests{model}``, ``jaxport_queued_requests{model}``: the scheduler's slots in use and
  its queue, read at each scrape;
* ``jaxport_preparing_requests``: requests whose body is parsed, conversation rendered or prompt tokenized
  now (on worker threads, off the event loop);
* refusals count in ``jaxport_refused_requests_total{function, error}`` (:mod:`.metrics`), the model's name as
  ``function``, ``SchedulerBusyError`` for a full queue.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
_RATES = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000)


@dataclass(frozen=True)
class GenerationMetrics:
    """The metrics, registered once per registry."""

    first_token: Histogram
    tokens: Counter
    rate: Histogram
    running: Gauge
    queued: Gauge
    preparing: Gauge

    def watch(self, model: str, running: Callable[[], float], queued: Callable[[], float]) -> None:
        """Reads the running and queued requests of ``model`` from these calls at each scrape."""
        self.running.labels(model).set_function(running)
        self.queued.labels(model).set_function(queued)

    def token(self, model: str, index: int, since_arrival: float) -> None:
        """Counts one token sent; the first (``index`` 0) also gives the time to first token."""
        self.tokens.labels(model).inc()
        if index == 0:
            self.first_token.labels(model).observe(since_arrival)

    def finished(self, model: str, tokens: int, since_first: float) -> None:
        """Records a request's tokens per second after its first token."""
        if tokens > 1 and since_first > 0:
            self.rate.labels(model).observe((tokens - 1) / since_first)


@functools.cache
def generation_metrics(registry: CollectorRegistry = REGISTRY) -> GenerationMetrics:
    """The metrics, registered in ``registry`` on first use."""
    return GenerationMetrics(
        Histogram("jaxport_time_to_first_token_seconds", "From a request's arrival to its first token",
                  ["model"], buckets=_SECONDS, registry=registry),
        Counter("jaxport_generated_tokens", "Tokens generated and sent", ["model"], registry=registry),
        Histogram("jaxport_request_tokens_per_second", "A request's tokens per second after its first",
                  ["model"], buckets=_RATES, registry=registry),
        Gauge("jaxport_running_requests", "Requests in the decode batch (slots in use)", ["model"],
              registry=registry),
        Gauge("jaxport_queued_requests", "Requests waiting for a slot", ["model"], registry=registry),
        Gauge("jaxport_preparing_requests", "Requests parsed, rendered or tokenized now, before admission",
              registry=registry),
    )
