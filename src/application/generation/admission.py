"""What every scheduler shares: a bounded queue of admitted requests, their streams, one worker thread.

:class:`WorkerScheduler` admits requests into a bounded queue and runs one
worker thread, the only one that touches the model's runner (its steps block);
the worker takes the queued requests in the order they came, as
:class:`Job`\\ s, and a concrete scheduler says how it runs them
(:mod:`~jaxport.application.generation.serial`: one at a time;
:mod:`~jaxport.application.generation.continuous`: joining between steps). A :class:`Job` is also
the request's :class:`~jaxport.domain.generation.scheduling.RequestStream`:
the worker puts its events, the caller takes them.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from collections.abc import Callable

from jaxport.application.generation.generator import Generator
from jaxport.domain.errors import GenerationError, SchedulerBusyError
from jaxport.domain.generation.loop import Layout
from jaxport.domain.generation.penalties import TokenLogprob
from jaxport.domain.generation.scheduling import FinishReason, GenerationRequest, SchedulerStats, StreamEvent


def check_count(name: str, value: int, least: int) -> None:
    """Raises GenerationError naming ``name`` unless ``value`` is an int of at least ``least``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise GenerationError(name, f"{value!r} is not a count of at least {least}")


def model_failed(exc: Exception) -> GenerationError:
    """The error a request's stream raises when the model's runtime failed with ``exc``."""
    error = GenerationError("model", f"the model's runtime failed: {type(exc).__name__}: {exc}")
    error.__cause__ = exc
    return error


class Job:
    """One admitted request and its stream (a :class:`~jaxport.domain.generation.scheduling.RequestStream`).

    Attributes:
        request: the request.
        layout: how its prompt is laid out, from its check on submit.
        cancelled: set when the caller cancelled it; the worker ends it before its next step.
        started: when the worker took it (``time.monotonic()``).
    """

    def __init__(self, request: GenerationRequest, layout: Layout, on_cancel: Callable[[Job], None]) -> None:
        self.request = request
        self.layout = layout
        self.started = 0.0
        self.cancelled = threading.Event()
        self._on_cancel = on_cancel
        self._events: queue.SimpleQueue[StreamEvent | GenerationError] = queue.SimpleQueue()
        self._ended = False
        self._last: StreamEvent | GenerationError | None = None
        self._wake: Callable[[], None] | None = None

    def emit(self, token: int, logprob: TokenLogprob | None = None) -> None:
        """Hands the caller its next token (the worker's side), with its logprobs where asked for."""
        self._put(StreamEvent(token, logprob=logprob))

    def finish(self, reason: FinishReason) -> None:
        """Ends the stream with ``reason`` (once: a later end is dropped)."""
        if not self._ended:
            self._ended = True
            self._put(StreamEvent(None, reason))

    def fail(self, error: GenerationError) -> None:
        """Ends the stream with ``error``, which the caller's :meth:`next` raises."""
        if not self._ended:
            self._ended = True
            self._put(error)

    def listen(self, wake: Callable[[], None]) -> None:
        """Calls ``wake`` after each event from now on, and at once if one waits (see
        :meth:`~jaxport.domain.generation.scheduling.RequestStream.listen`)."""
        self._wake = wake
        if not self._events.empty() or self._last is not None:  # an event put before ``wake`` was set
            wake()

    def _put(self, event: StreamEvent | GenerationError) -> None:
        self._events.put(event)
        wake = self._wake
        if wake is not None:
            wake()

    def next(self, timeout: float) -> StreamEvent:
        """The next event; blocks at most ``timeout`` seconds (after the end: the end again).

        Raises:
            TimeoutError: nothing came within ``timeout``.
            GenerationError: the model failed on this request.
        """
        event = self._last
        if event is None:
            try:
                event = self._events.get(timeout=timeout)
            except queue.Empty:
                raise TimeoutError(f"no token of the request came within {timeout} seconds") from None
            if isinstance(event, GenerationError) or event.finish is not None:
                self._last = event
        if isinstance(event, GenerationError):
            raise event
        return event

    def cancel(self) -> None:
        """Stops the request: its slot is freed before the next step; the stream ends CANCELLED."""
        self.cancelled.set()
        self._on_cancel(self)


class WorkerScheduler:
    """Admission into a bounded queue, stats and close, around one worker thread.

    A request is checked once, on submit, as ``generate`` checks it (with the
    prompt lengths the prefill was compiled for), and refused when the queue
    holds ``max_queue`` requests beyond those the free slots will take at the
    next step. A subclass runs the jobs in :meth:`_serve` (on the worker
    thread), taking them with :meth:`_take` and handing each one back with
    :meth:`_release`; it sets its own fields before calling this constructor,
    which starts the worker.

    Args:
        generator: the model.
        slots: how many requests run at once.
        max_queue: how many admitted requests may wait for a slot.
    """

    def __init__(self, generator: Generator, slots: int, max_queue: int) -> None:
        check_count("max_slots", slots, 1)
        check_count("max_queue", max_queue, 0)
        self._generator = generator
        self._slots = slots
        self._max_queue = max_queue
        self._lock = threading.Condition()
        self._pending: deque[Job] = deque()
        self._running = 0
        self._refused = 0
        self._closed = False
        self._deadline = float("inf")
        self._seconds = 1.0  # a request's recent time in a slot (a moving average): the retry hint
        self._worker = threading.Thread(target=self._work, name=f"jaxport-{type(self).__name__}", daemon=True)
        self._worker.start()

    def submit(self, request: GenerationRequest) -> Job:
        """Admits ``request``: its stream.

        Raises:
            GenerationError: the request asks what the model cannot do (naming the argument).
            SchedulerBusyError: the queue is full (with ``retry_after``), or the scheduler is closed.
        """
        layout = self._generator.check([request.prompt], request.max_new_tokens, request.options, request.stop)
        job = Job(request, layout, self._cancel_queued)
        with self._lock:
            if self._closed:
                self._refused += 1
                raise SchedulerBusyError("the generation scheduler is closing: it admits no new request", None)
            if len(self._pending) >= self._max_queue + self._slots - self._running:
                self._refused += 1
                wait = round(max(1.0, self._seconds * (len(self._pending) + 1) / self._slots), 1)
                raise SchedulerBusyError(f"the queue holds {len(self._pending)} requests waiting for "
                                         f"{self._slots} slot(s), the most it takes; retry after {wait} s", wait)
            self._pending.append(job)
            self._lock.notify_all()
        return job

    def stats(self) -> SchedulerStats:
        """The running and queued requests now, and the requests refused so far."""
        with self._lock:
            return SchedulerStats(self._running, len(self._pending), self._refused)

    def close(self, grace: float) -> None:
        """Stops admitting; lets admitted requests finish for up to ``grace`` seconds, then
        cancels what is left, and returns when the worker has stopped."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._deadline = time.monotonic() + max(0.0, grace)
                self._lock.notify_all()
        self._worker.join()

    def _serve(self) -> None:
        """The worker thread: runs the admitted jobs until the scheduler is closed and none is left."""
        raise NotImplementedError

    def _work(self) -> None:
        """:meth:`_serve`; should it fail, the scheduler closes and the queued jobs end with the error
        (the running ones are the subclass's to end), so that no caller waits on a dead worker."""
        try:
            self._serve()
        except Exception as exc:
            with self._lock:
                self._closed = True
                left, self._pending = list(self._pending), deque()
            for job in left:
                job.fail(model_failed(exc))
            raise

    def _take(self, block: bool) -> Job | None:
        """The oldest queued job, now running (None: none is queued; with ``block``, waits for one
        unless the scheduler is closed). Past the close's grace, a job taken comes cancelled."""
        with self._lock:
            while block and not self._pending and not self._closed:
                self._lock.wait()
            if not self._pending:
                return None
            self._running += 1
            job = self._pending.popleft()
        job.started = time.monotonic()
        if self.past_grace():
            job.cancelled.set()
        return job

    def _release(self, job: Job) -> None:
        """A job taken by :meth:`_take` has left its slot."""
        with self._lock:
            self._running -= 1
            self._seconds = 0.8 * self._seconds + 0.2 * (time.monotonic() - job.started)

    def _done(self) -> bool:
        """Whether the scheduler is closed and no job is queued: the worker may stop when idle."""
        with self._lock:
            return self._closed and not self._pending

    def past_grace(self) -> bool:
        """Whether the scheduler was closed and its grace is over: what runs is to be cancelled."""
        return time.monotonic() >= self._deadline

    def _cancel_queued(self, job: Job) -> None:
        """A job cancelled while queued ends now; a running one at the worker's next step."""
        with self._lock:
            try:
                self._pending.remove(job)
            except ValueError:
                return
        job.finish(FinishReason.CANCELLED)
