"""Waking the event loop from the model's worker thread without holding up the worker: :class:`Relay`.

A token's stream wakes its reader after each event
(:meth:`~jaxport.domain.generation.scheduling.RequestStream.listen`), on the
worker thread. Waking an event loop from there (``call_soon_threadsafe``
writes to its socket, which lets go of the GIL) hands the GIL to the loop in
the middle of the worker's step: the loop's work for the token (its chunk,
HTTP) then runs before the worker's next step, not beside it (one stream ran
at 0.8-0.94 of the rate it has when a thread waits for its tokens). The
worker's wake only puts the event on the relay's queue and goes on; the
relay's thread, which gets the GIL when the worker waits on its runtime, wakes
the loop once for every event queued: the loop's work overlaps the next step.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import queue
import threading
from collections.abc import Callable, Iterable


class Relay:
    """One thread that sets the event loop's events for the model's worker.

    Args:
        loop: the event loop whose events are set.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._queue: queue.SimpleQueue[asyncio.Event | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="jaxport-relay", daemon=True)
        self._thread.start()

    def waker(self, event: asyncio.Event) -> Callable[[], None]:
        """What sets ``event`` soon, called from any thread without blocking it or letting go of the GIL."""
        return functools.partial(self._queue.put, event)

    def close(self) -> None:
        """Stops the thread once it set the events queued before."""
        self._queue.put(None)
        self._thread.join()

    def _run(self) -> None:
        while True:
            queued = [self._queue.get()]
            with contextlib.suppress(queue.Empty):
                while True:
                    queued.append(self._queue.get_nowait())
            events = {event for event in queued if event is not None}
            if events:
                with contextlib.suppress(RuntimeError):  # the loop closed: nobody reads these any more
                    self._loop.call_soon_threadsafe(_set_all, events)
            if None in queued:
                return


def _set_all(events: Iterable[asyncio.Event]) -> None:
    for event in events:
        event.set()
