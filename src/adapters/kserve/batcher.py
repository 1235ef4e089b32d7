"""Joins concurrent requests to one function into one call, on an asyncio event loop, with NumPy.

The plan (which requests join, how far a group is padded, where each
request's rows go back) is the domain's
(:mod:`jaxport.domain.serving.batching`); this module holds the queue, the
timer and the arrays.

A request is checked alone first (jaxport's call front), so a bad request is
refused with its own error and never fails the others. The first waiting
request starts the timer (``max_delay_s``); the batch is flushed when the
timer fires, when the waiting rows reach ``max_rows``, or at once while the
batcher drains (the server is stopping). Each group runs on the function's
executor: concatenated along axis 0, padded with copies of its last real
row up to a compiled size, run as one call, and sliced back.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from jaxport.domain.serving.batching import largest_group, padded_rows, plan_groups, row_slices
from jaxport.domain.serving.protocol import ServedFunction
from jaxport.adapters.array_rows import join_rows


@dataclass(frozen=True)
class BatchReport:
    """What one joined call was: its requests, real rows and padding rows."""

    function: str
    requests: int
    rows: int
    padding: int


@dataclass
class _Waiting:
    leaves: list[Any]
    rows: int
    future: asyncio.Future[list[Any]]


class AsyncioBatcher:
    """Joins requests to ``function`` along its batch dimension ``variable``.

    Args:
        function: the served function (its every input and output leads with ``variable``).
        variable: the batch dimension variable.
        executor: where the joined calls run (one thread: calls of a function run one at a time).
        max_rows: the most rows of one call (capped by the largest compiled size).
        max_delay_s: how long the first waiting request waits for others.
        report: called after each joined call ran, with what it was.
    """

    def __init__(self, function: ServedFunction, variable: str, executor: concurrent.futures.Executor,
                 max_rows: int, max_delay_s: float, report: Callable[[BatchReport], None]) -> None:
        self.function = function
        self.compiled = function.compiled_sizes(variable)
        self.max_rows = largest_group(max_rows, self.compiled)
        self.max_delay_s = max_delay_s
        self._executor = executor
        self._report = report
        self._waiting: list[_Waiting] = []
        self._timer: asyncio.TimerHandle | None = None
        self._draining = False
        self._running: set[asyncio.Task[None]] = set()

    @property
    def waiting_rows(self) -> int:
        """The rows of the requests waiting to be joined."""
        return sum(w.rows for w in self._waiting)

    async def submit(self, leaves: list[Any]) -> list[Any]:
        """The flat results of one request, run joined with others.

        Raises:
            CallError (and its subclasses), ShapeAssertionError: the request
                does not match the function (checked alone, before it waits).
            JaxportError: the joined call failed (every request of it gets the error).
        """
        self.function.check(leaves)
        loop = asyncio.get_running_loop()
        waiting = _Waiting(leaves, int(leaves[0].shape[0]), loop.create_future())
        self._waiting.append(waiting)
        if self._draining or self.waiting_rows >= self.max_rows:
            self.flush()
        elif self._timer is None:
            self._timer = loop.call_later(self.max_delay_s, self.flush)
        return await waiting.future

    def flush(self) -> None:
        """Starts the calls of every waiting request now."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        waiting, self._waiting = self._waiting, []
        for group in plan_groups([w.rows for w in waiting], self.max_rows):
            task = asyncio.get_running_loop().create_task(self._run([waiting[i] for i in group]))
            self._running.add(task)
            task.add_done_callback(self._running.discard)

    async def drain(self) -> None:
        """Flushes now and from now on (the server is stopping); returns when every call has run."""
        self._draining = True
        self.flush()
        while self._running:
            await asyncio.gather(*self._running, return_exceptions=True)

    async def _run(self, group: Sequence[_Waiting]) -> None:
        loop = asyncio.get_running_loop()
        try:
            results = await loop.run_in_executor(self._executor, self._call, [w.leaves for w in group])
        except Exception as exc:  # noqa: BLE001 - handed to every caller of the group, who re-raises it
            for w in group:
                if not w.future.done():
                    w.future.set_exception(exc)
            return
        for w, result in zip(group, results):
            if not w.future.done():
                w.future.set_result(result)

    def _call(self, requests: list[list[Any]]) -> list[list[Any]]:
        """Runs the requests as one call (on the executor's thread); gives each its results."""
        rows = [int(leaves[0].shape[0]) for leaves in requests]
        total = sum(rows)
        size = padded_rows(total, self.compiled)
        joined = [join_rows([r[i] for r in requests], size - total) for i in range(len(requests[0]))]
        outputs = [np.asarray(o) for o in self.function.run(joined)]
        self._report(BatchReport(self.function.name, len(requests), total, size - total))
        return [[o[start:stop] for o in outputs] for start, stop in row_slices(rows)]

