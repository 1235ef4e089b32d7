"""Many callers on one generative model: the serial and the continuous scheduler, on JAX and ONNX Runtime.

Each request's tokens are compared with the same request run alone through
``Generator.generate`` (same seed). A :class:`Gated` runner wraps the real
runner to hold the worker between steps where a test needs the model busy
(a full queue, a request that joins while others run); it computes nothing
itself. Every wait is bounded.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import jaxport
from jaxport.application.generation.schedulers import scheduler_for
from jaxport.domain.generation.ports import SamplingOptions, SlotRunner, StepBatch, StepRunner
from jaxport.domain.generation.scheduling import (FinishReason, GenerationRequest, RequestStream, Scheduler,
                                                  SchedulerStats, stream_tokens)
from jaxport.domain.ports import HostArray
from jaxport.errors import GenerationError, SchedulerBusyError
from tests.helpers import gpt_model as gpt

WAIT = 60.0  # seconds: the bound of every wait

REQUESTS = [GenerationRequest((1, 2, 3), 8), GenerationRequest((4, 5), 10, SamplingOptions(8.0, seed=3)),
            GenerationRequest((7,), 6), GenerationRequest((9, 8, 7, 6), 7, SamplingOptions(8.0, 20, 0.95, seed=11)),
            GenerationRequest((3, 3), 9, SamplingOptions(2.0, seed=5)), GenerationRequest((2,), 12),
            GenerationRequest((5, 1, 4), 5, SamplingOptions(8.0, seed=3)), GenerationRequest((6, 6, 6), 8)]


class Gated:
    """The real runner, each step held until the gate is open; records each step's function and positions."""

    def __init__(self, runner: StepRunner) -> None:
        self.inner = runner
        self.gate = threading.Event()
        self.gate.set()
        self.steps: list[tuple[str, tuple[tuple[int, ...], ...]]] = []

    def start(self, batch: int) -> None:
        self.inner.start(batch)

    def step(self, function: str, batch: StepBatch) -> HostArray:
        self._hold(function, batch)
        return self.inner.step(function, batch)

    def _hold(self, function: str, batch: StepBatch) -> None:
        self.gate.wait(WAIT)
        self.steps.append((function, batch.positions))


class GatedSlots(Gated):
    """:class:`Gated` for a runner with slots."""

    def prefill_slot(self, slot: int, function: str, batch: StepBatch) -> HostArray:
        self._hold(f"{function}@{slot}", batch)
        assert isinstance(self.inner, SlotRunner)
        return self.inner.prefill_slot(slot, function, batch)


def gated(generator: jaxport.Generator) -> tuple[jaxport.Generator, Gated]:
    """A generator on ``generator``'s runner, wrapped in a gate."""
    runner = GatedSlots(generator.runner) if isinstance(generator.runner, SlotRunner) else Gated(generator.runner)
    return jaxport.Generator(generator.spec, runner, generator.samplers), runner


def alone(generator: jaxport.Generator, request: GenerationRequest) -> list[int]:
    """The request's tokens run alone through ``generate``."""
    o = request.options
    return generator.generate(list(request.prompt), request.max_new_tokens, temperature=o.temperature,
                              top_k=o.top_k, top_p=o.top_p, seed=o.seed, stop=request.stop)


def until(condition: Callable[[], bool], what: str) -> None:
    """Waits (bounded) until ``condition`` holds."""
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, f"waited {WAIT} s for {what}"
        time.sleep(0.002)


def concurrently(scheduler: Scheduler, requests: list[GenerationRequest]) -> list[tuple[list[int], FinishReason]]:
    """Each request submitted and read by a thread of its own, all at once."""
    results: list[tuple[list[int], FinishReason] | BaseException] = [TimeoutError()] * len(requests)

    def one(i: int) -> None:
        try:
            results[i] = stream_tokens(scheduler.submit(requests[i]), WAIT)
        except BaseException as exc:  # reported by the assertion below
            results[i] = exc

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(requests))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT)
    assert all(isinstance(r, tuple) for r in results), results
    return [r for r in results if isinstance(r, tuple)]


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The model whose cache has one write index shared by the batch (serial only), as a bundle."""
    return gpt.save(tmp_path_factory.mktemp("gpt") / "shared", True)


@pytest.fixture
def serial(shared: Path) -> Iterator[tuple[jaxport.Generator, Scheduler, Gated]]:
    generator = jaxport.load_generator(shared)
    wrapped, runner = gated(generator)
    scheduler = scheduler_for(wrapped, 4, 1)
    yield generator, scheduler, runner
    runner.gate.set()
    scheduler.close(0.0)


def test_the_serial_scheduler_runs_concurrent_requests_one_at_a_time_each_with_its_own_tokens(shared: Path) -> None:
    generator = jaxport.load_generator(shared)
    expected = [alone(generator, r) for r in REQUESTS[:4]]
    scheduler = scheduler_for(generator, 4, 4)
    assert not scheduler.continuous
    results = concurrently(scheduler, REQUESTS[:4])
    scheduler.close(WAIT)
    assert [tokens for tokens, _ in results] == expected
    assert {finish for _, finish in results} == {FinishReason.LENGTH}
    stop = GenerationRequest((1, 2, 3), 8, stop=(expected[0][3],))
    with pytest.raises(SchedulerBusyError, match="closing") as busy:
        scheduler.submit(stop)
    assert busy.value.retry_after is None and scheduler.stats().refused == 1


def test_the_serial_scheduler_stops_at_a_stop_token_and_refuses_a_bad_request(shared: Path) -> None:
    generator = jaxport.load_generator(shared)
    expected = alone(generator, REQUESTS[0])
    scheduler = scheduler_for(generator, 1, 0)
    try:
        stream = scheduler.submit(GenerationRequest((1, 2, 3), 8, stop=(expected[3],)))
        assert stream_tokens(stream, WAIT) == (expected[:expected.index(expected[3])], FinishReason.STOP)
        with pytest.raises(GenerationError, match="max_new_tokens"):
            scheduler.submit(GenerationRequest((1, 2, 3), 15))
        with pytest.raises(GenerationError, match=r"prompt\[1\]: 99"):
            scheduler.submit(GenerationRequest((1, 99), 2))
    finally:
        scheduler.close(WAIT)


def test_over_the_queue_a_request_is_refused_with_a_retry_hint(
        serial: tuple[jaxport.Generator, Scheduler, Gated]) -> None:
    _, scheduler, runner = serial
    running, queued = held(scheduler, runner)
    with pytest.raises(SchedulerBusyError, match="the queue holds 1 requests") as busy:
        scheduler.submit(REQUESTS[2])
    assert busy.value.retry_after is not None and busy.value.retry_after >= 1
    assert scheduler.stats() == SchedulerStats(running=1, queued=1, refused=1)
    runner.gate.set()
    assert stream_tokens(running, WAIT)[1] is FinishReason.LENGTH
    assert stream_tokens(queued, WAIT)[1] is FinishReason.LENGTH


def test_a_cancelled_request_ends_queued_or_running(serial: tuple[jaxport.Generator, Scheduler, Gated]) -> None:
    generator, scheduler, runner = serial
    running, queued = held(scheduler, runner)
    queued.cancel()
    assert queued.next(WAIT).finish is FinishReason.CANCELLED  # at once: it never ran
    assert scheduler.stats().queued == 0
    running.cancel()
    runner.gate.set()
    tokens, finish = stream_tokens(running, WAIT)
    assert finish is FinishReason.CANCELLED and len(tokens) <= 1
    after = scheduler.submit(REQUESTS[2])  # the model serves the next one
    assert stream_tokens(after, WAIT)[0] == gpt.reference(True, [7], 6)


def test_close_cancels_what_runs_past_its_grace_and_then_admits_nothing(
        serial: tuple[jaxport.Generator, Scheduler, Gated]) -> None:
    _, scheduler, runner = serial
    running, queued = held(scheduler, runner)
    closing = threading.Thread(target=scheduler.close, args=(0.0,))
    closing.start()
    until(lambda: not _admits(scheduler), "the scheduler to stop admitting")
    runner.gate.set()
    closing.join(WAIT)
    assert not closing.is_alive()
    assert stream_tokens(running, WAIT)[1] is FinishReason.CANCELLED
    assert stream_tokens(queued, WAIT) == ([], FinishReason.CANCELLED)


def held(scheduler: Scheduler, runner: Gated) -> tuple[RequestStream, RequestStream]:
    """A request running, held at its first step, and one queued behind it."""
    runner.gate.clear()
    running = scheduler.submit(REQUESTS[0])
    until(lambda: scheduler.stats().running == 1, "the first request to run")
    return running, scheduler.submit(REQUESTS[1])


def _admits(scheduler: Scheduler) -> bool:
    try:
        scheduler.submit(REQUESTS[2]).cancel()
    except SchedulerBusyError as exc:
        return exc.retry_after is not None  # a full queue, not a closed scheduler
    return True
