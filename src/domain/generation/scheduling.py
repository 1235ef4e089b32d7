"""Requests that share one generative model: what a scheduler promises the server in front of it.

A scheduler owns one model's step runner and admits requests from many
callers (threads). Each admitted request gets a :class:`RequestStream` that
yields its tokens as they come and ends with why it ended. Where the model's
decode takes per-row positions, a continuous scheduler runs a batch of slots:
a new request is prefilled and joins the running decode batch at the next
step, and a finished or cancelled one frees its slot. Elsewhere requests run
one at a time, in the order they came, from a bounded queue.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from jaxport.domain.generation.penalties import TokenLogprob
from jaxport.domain.generation.ports import SamplingOptions


@dataclass(frozen=True, slots=True)
class GenerationRequest:
    """One request: a prompt of token ids and how to continue it.

    Attributes:
        prompt: the prompt's token ids (checked on submit, as ``generate`` checks them).
        max_new_tokens: the most tokens generated.
        options: how each token is picked (a seed makes the tokens reproducible).
        stop: token ids that end the request, like the model's end-of-text ids (not emitted).
    """

    prompt: tuple[int, ...]
    max_new_tokens: int
    options: SamplingOptions = SamplingOptions()
    stop: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Scheduling:
    """How a served model runs its requests, and why: what ``jaxport serve`` says at start and in
    ``/openai/v1/models``.

    Attributes:
        continuous: whether requests join a running decode batch between steps (else one at a time).
        slots: how many requests run at once (``--max-slots`` where continuous; else 1).
        reason: why, in the terms of ``jaxport serve --help``.
    """

    continuous: bool
    slots: int
    reason: str

    def sentence(self) -> str:
        """One sentence: how requests run, and why."""
        how = (f"continuous batching: requests join a decode batch of {self.slots} slots (--max-slots) between "
               "steps" if self.continuous else "one request at a time")
        return f"{how}: {self.reason}"


class FinishReason(Enum):
    """Why a request's stream ended."""

    STOP = "stop"
    """An end-of-text or stop token came."""
    LENGTH = "length"
    """``max_new_tokens`` were generated."""
    CANCELLED = "cancelled"
    """The caller cancelled it, or the scheduler was closed before it finished."""


@dataclass(frozen=True, slots=True)
class StreamEvent:
    """What a :class:`RequestStream` yields: a token, or the end (``token`` None, ``finish`` set)."""

    token: int | None
    finish: FinishReason | None = None
    #: The token's logprobs, where its request asked for them.
    logprob: TokenLogprob | None = None


class RequestStream(Protocol):
    """One admitted request's tokens, as they come."""

    def next(self, timeout: float) -> StreamEvent:
        """The next event; blocks at most ``timeout`` seconds.

        Raises:
            TimeoutError: nothing came within ``timeout``.
            GenerationError: the model failed on this request (the stream is then over).
        """
        ...

    def cancel(self) -> None:
        """Stops the request: its slot is freed before the next step; the stream ends CANCELLED."""
        ...

    def listen(self, wake: Callable[[], None]) -> None:
        """Calls ``wake`` after each event from now on (on the thread that runs the model: it must not
        block), and at once if an event waits: a reader that must not block (an event loop) reads with
        ``next(0)`` when woken."""
        ...


@dataclass(frozen=True, slots=True)
class SchedulerStats:
    """A scheduler's gauges and counters, for metrics."""

    running: int
    queued: int
    refused: int


class Scheduler(Protocol):
    """Admits requests to one model and runs them."""

    @property
    def continuous(self) -> bool:
        """Whether requests join a running batch between steps (else: one at a time)."""
        ...

    def submit(self, request: GenerationRequest) -> RequestStream:
        """Admits ``request``: its stream.

        Raises:
            GenerationError: the request asks what the model cannot do (naming the argument).
            SchedulerBusyError: the queue is full (with ``retry_after``), or the scheduler is closed.
        """
        ...

    def stats(self) -> SchedulerStats:
        """The running and queued requests now, and the requests refused so far."""
        ...

    def close(self, grace: float) -> None:
        """Stops admitting; lets running requests finish for up to ``grace`` seconds, then
        cancels what is left, and returns when the model is idle."""
        ...


def stream_tokens(stream: RequestStream, timeout: float) -> tuple[list[int], FinishReason]:
    """Every token of ``stream`` and why it ended (each wait bounded by ``timeout``)."""
    tokens: list[int] = []
    while True:
        event = stream.next(timeout)
        if event.finish is not None:
            return tokens, event.finish
        assert event.token is not None
        tokens.append(event.token)
