"""Many callers on one generative model: the serial and the continuous scheduler, on JAX and ONNX Runtime
(requests prefilled together on TensorFlow too).

Each request's tokens are compared with the same request run alone through
``Generator.generate`` (same seed). A :class:`Gated` runner wraps the real
runner to hold the worker between steps where a test needs the model busy
(a full queue, a request that joins while others run); it computes nothing
itself. Every wait is bounded.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
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
    """The real runner, each step held while the gate is shut until a permit comes; records each
    step's function (``prefill@slot`` for a prefill into a slot) and positions."""

    def __init__(self, runner: StepRunner) -> None:
        self.inner = runner
        self.gate = threading.Event()
        self.gate.set()
        self.permits = threading.Semaphore(0)
        self.waiting = threading.Event()  # a step waits for a permit
        self.fail = False  # each step raises, as a runtime that lost its device
        self.steps: list[tuple[str, tuple[tuple[int, ...], ...]]] = []

    def start(self, batch: int) -> None:
        self.inner.start(batch)

    def step(self, function: str, batch: StepBatch) -> HostArray:
        self._hold(function, batch)
        return self.inner.step(function, batch)

    def _hold(self, function: str, batch: StepBatch) -> None:
        if not self.gate.is_set():
            self.waiting.set()
            self.permits.acquire(timeout=WAIT)
            self.waiting.clear()
        self.steps.append((function, batch.positions))
        if self.fail:
            raise RuntimeError("the device is gone")

    def open(self) -> None:
        self.gate.set()
        self.permits.release(1)  # for a step already waiting


class GatedSlots(Gated):
    """:class:`Gated` for a runner with slots."""

    @property
    def prefills_together(self) -> bool:
        assert isinstance(self.inner, SlotRunner)
        return self.inner.prefills_together

    def prefill_slots(self, slots: Sequence[int], function: str, batch: StepBatch) -> HostArray:
        self._hold(f"{function}@{','.join(map(str, slots))}", batch)
        assert isinstance(self.inner, SlotRunner)
        return self.inner.prefill_slots(slots, function, batch)

    def step_first(self, function: str, batch: StepBatch) -> HostArray:
        self._hold(function, batch)
        assert isinstance(self.inner, SlotRunner)
        return self.inner.step_first(function, batch)


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


#: Each kind of scheduler, on the model and the runtime it serves: serial where the cache's write
#: index is shared by the batch, continuous where each row has its own positions.
KINDS = ["serial-jax", "serial-onnx", "continuous-jax", "continuous-onnx"]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each kind's model directory, made when first asked for."""
    return {}


@pytest.fixture(params=KINDS)
def model(request: pytest.FixtureRequest, models: dict[str, Path],
          tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    kind: str = request.param
    if kind not in models:
        root = tmp_path_factory.mktemp(kind)
        bundle = gpt.save(root / "bundle", kind.startswith("serial"))
        if kind.endswith("onnx"):
            jaxport.to_onnx(bundle, root / "onnx")
        if kind.endswith("tf"):
            pytest.importorskip("tensorflow", reason="TensorFlow is not installed (pip install 'jaxport[tf]')")
            jaxport.convert(bundle, root / "tf", to="savedmodel")
        models[kind] = bundle if kind.endswith("jax") else root / kind.split("-")[1]
    return kind, models[kind]


@pytest.fixture
def held_model(model: tuple[str, Path]) -> Iterator[tuple[str, Scheduler, Gated]]:
    """The model's scheduler with one slot and a queue of one, its runner gated."""
    kind, path = model
    wrapped, runner = gated(jaxport.load_generator(path))
    scheduler = scheduler_for(wrapped, 1, 1)
    assert scheduler.continuous == kind.startswith("continuous")
    yield kind, scheduler, runner
    runner.open()
    scheduler.close(0.0)


def test_eight_concurrent_requests_all_complete_each_with_the_tokens_it_gets_alone(model: tuple[str, Path]) -> None:
    kind, path = model
    generator = jaxport.load_generator(path)
    requests = REQUESTS + [GenerationRequest((1, 2, 3), 8, stop=(gpt.reference(kind.startswith("serial"),
                                                                               [1, 2, 3], 8)[3],))]
    expected = [alone(generator, r) for r in requests]
    scheduler = scheduler_for(generator, 8, 8)
    assert scheduler.continuous == kind.startswith("continuous")
    results = concurrently(scheduler, requests)
    scheduler.close(WAIT)
    assert [tokens for tokens, _ in results] == expected
    assert [finish for _, finish in results] == [FinishReason.LENGTH] * 8 + [FinishReason.STOP]
    assert scheduler.stats() == SchedulerStats(running=0, queued=0, refused=0)
    with pytest.raises(SchedulerBusyError, match="closing") as busy:
        scheduler.submit(REQUESTS[0])
    assert busy.value.retry_after is None and scheduler.stats().refused == 1


def test_a_bad_request_is_refused_on_submit_naming_the_argument(model: tuple[str, Path]) -> None:
    _, path = model
    scheduler = scheduler_for(jaxport.load_generator(path), 2, 0)
    try:
        with pytest.raises(GenerationError, match="max_new_tokens"):
            scheduler.submit(GenerationRequest((1, 2, 3), 15))
        with pytest.raises(GenerationError, match=r"prompt\[1\]: 99"):
            scheduler.submit(GenerationRequest((1, 99), 2))
        with pytest.raises(GenerationError, match="top_p"):
            scheduler.submit(GenerationRequest((1,), 2, SamplingOptions(1.0, top_p=0.0)))
        assert scheduler.stats() == SchedulerStats(running=0, queued=0, refused=0)
    finally:
        scheduler.close(WAIT)
    with pytest.raises(GenerationError, match="max_slots"):
        scheduler_for(jaxport.load_generator(path), 0, 0)


def test_over_the_queue_a_request_is_refused_with_a_retry_hint(
        held_model: tuple[str, Scheduler, Gated]) -> None:
    _, scheduler, runner = held_model
    running, queued = held(scheduler, runner)
    with pytest.raises(SchedulerBusyError, match="the queue holds 1 requests") as busy:
        scheduler.submit(REQUESTS[2])
    assert busy.value.retry_after is not None and busy.value.retry_after >= 1
    assert scheduler.stats() == SchedulerStats(running=1, queued=1, refused=1)
    runner.open()
    assert stream_tokens(running, WAIT)[1] is FinishReason.LENGTH
    assert stream_tokens(queued, WAIT)[1] is FinishReason.LENGTH


def test_a_cancelled_request_ends_queued_or_running_and_frees_its_slot(
        held_model: tuple[str, Scheduler, Gated]) -> None:
    kind, scheduler, runner = held_model
    running, queued = held(scheduler, runner)
    queued.cancel()
    assert queued.next(WAIT).finish is FinishReason.CANCELLED  # at once: it never ran
    assert scheduler.stats() == SchedulerStats(running=1, queued=0, refused=0)
    after = scheduler.submit(REQUESTS[2])  # the queue has room again
    running.cancel()
    runner.open()
    tokens, finish = stream_tokens(running, WAIT)
    assert finish is FinishReason.CANCELLED and len(tokens) <= 1
    assert stream_tokens(after, WAIT) == (gpt.reference(kind.startswith("serial"), [7], 6), FinishReason.LENGTH)
    until(lambda: scheduler.stats().running == 0, "the last request to leave its slot")


@pytest.mark.parametrize("model", ["continuous-jax", "continuous-onnx"], indirect=True)
def test_a_request_joins_the_running_decode_at_the_next_step(model: tuple[str, Path]) -> None:
    _, path = model
    generator = jaxport.load_generator(path)
    first, second = GenerationRequest((2,), 12), GenerationRequest((4, 5), 6, SamplingOptions(8.0, seed=3))
    expected = [alone(generator, first), alone(generator, second)]
    wrapped, runner = gated(generator)
    scheduler = scheduler_for(wrapped, 4, 0)
    try:
        runner.gate.clear()
        a = scheduler.submit(first)
        runner.permits.release(3)  # its prefill and two decodes: three tokens
        got = [a.next(WAIT).token for _ in range(3)]
        until(runner.waiting.is_set, "the fourth step to wait")
        b = scheduler.submit(second)
        runner.open()
        rest, finish = stream_tokens(a, WAIT)
        assert (got + rest, finish) == (expected[0], FinishReason.LENGTH)
        assert stream_tokens(b, WAIT) == (expected[1], FinishReason.LENGTH)
    finally:
        runner.open()
        scheduler.close(0.0)
    # The second came while the fourth step waited: prefilled into slot 1 after it, then in every decode.
    assert [f for f, _ in runner.steps[:6]] == ["prefill@0", "decode", "decode", "decode", "prefill@1", "decode"]
    # Each decode runs over the first slots that hold the requests alone: one row, then two of the four.
    assert [p for _, p in runner.steps[1:4]] == [((1,),), ((2,),), ((3,),)]
    assert runner.steps[5][1] == ((4,), (2,))


def joined_at_one_step(generator: jaxport.Generator, slots: int, requests: list[GenerationRequest]
                       ) -> tuple[GatedSlots, list[tuple[list[int], FinishReason]]]:
    """A request of the prompt ``[2]`` held at its prefill while ``requests`` queue, so that they join at the
    next step together: the gated runner, and the tokens and finish of that request and of each of them."""
    wrapped, runner = gated(generator)
    assert isinstance(runner, GatedSlots)
    scheduler = scheduler_for(wrapped, slots, 0)
    try:
        runner.gate.clear()
        first = scheduler.submit(GenerationRequest((2,), 4))
        until(runner.waiting.is_set, "the first prefill to wait")
        streams = [scheduler.submit(r) for r in requests]
        until(lambda: scheduler.stats().queued == len(requests), "the requests to queue")
        runner.open()
        return runner, [stream_tokens(s, WAIT) for s in [first] + streams]
    finally:
        runner.open()
        scheduler.close(WAIT)


#: Requests that join at one step: three prompts of 3 tokens (greedy and sampled, prefilled as one batch),
#: then one of 1 token and one of 2 (alone each).
TOGETHER = [GenerationRequest((1, 2, 3), 8), GenerationRequest((9, 8, 7), 7, SamplingOptions(8.0, 20, 0.95, seed=11)),
            GenerationRequest((7,), 6), GenerationRequest((5, 1, 4), 5, SamplingOptions(8.0, seed=3)),
            GenerationRequest((4, 5), 10, SamplingOptions(2.0, seed=5))]


@pytest.mark.parametrize("model", ["continuous-jax", "continuous-onnx", "continuous-tf"], indirect=True)
def test_requests_that_join_at_one_step_with_prompts_of_one_length_are_prefilled_as_one_batch(
        model: tuple[str, Path]) -> None:
    _, path = model
    generator = jaxport.load_generator(path)
    expected = [alone(generator, r) for r in TOGETHER]
    assert [expected[0], expected[2]] == [gpt.reference(False, [1, 2, 3], 8), gpt.reference(False, [7], 6)]
    runner, results = joined_at_one_step(generator, 8, TOGETHER)
    assert runner.prefills_together
    assert results == [(gpt.reference(False, [2], 4), FinishReason.LENGTH)] + [
        (tokens, FinishReason.LENGTH if len(tokens) == r.max_new_tokens else FinishReason.STOP)
        for tokens, r in zip(expected, TOGETHER)]
    # The five came while the first prefill waited: taken at the next step, same lengths as one batch, in
    # the order each length first came; the next decode runs all six.
    prefills = [(f, p) for f, p in runner.steps if f.startswith("prefill")]
    assert prefills == [("prefill@0", ((0,),)), ("prefill@1,2,4", ((0, 1, 2),) * 3), ("prefill@3", ((0,),)),
                        ("prefill@5", ((0, 1),))]
    assert [len(p) for f, p in runner.steps if f == "decode"][:2] == [1, 8]


def test_a_runtime_that_fails_ends_the_request_with_an_error_and_the_next_one_runs(
        held_model: tuple[str, Scheduler, Gated]) -> None:
    kind, scheduler, runner = held_model
    runner.fail = True
    with pytest.raises(GenerationError, match="model: the model's runtime failed: RuntimeError: the device is gone"):
        stream_tokens(scheduler.submit(REQUESTS[0]), WAIT)
    runner.fail = False
    assert stream_tokens(scheduler.submit(REQUESTS[2]), WAIT)[0] == gpt.reference(kind.startswith("serial"), [7], 6)


def test_close_lets_admitted_requests_finish_within_its_grace(held_model: tuple[str, Scheduler, Gated]) -> None:
    kind, scheduler, runner = held_model
    running, queued = held(scheduler, runner)
    closing = threading.Thread(target=scheduler.close, args=(WAIT,))
    closing.start()
    until(lambda: not _admits(scheduler), "the scheduler to stop admitting")
    runner.open()
    shared = kind.startswith("serial")
    assert stream_tokens(running, WAIT) == (gpt.reference(shared, [1, 2, 3], 8), FinishReason.LENGTH)
    assert stream_tokens(queued, WAIT)[1] is FinishReason.LENGTH
    closing.join(WAIT)
    assert not closing.is_alive()


def test_close_cancels_what_runs_past_its_grace_and_then_admits_nothing(
        held_model: tuple[str, Scheduler, Gated]) -> None:
    _, scheduler, runner = held_model
    running, queued = held(scheduler, runner)
    closing = threading.Thread(target=scheduler.close, args=(0.0,))
    closing.start()
    until(lambda: not _admits(scheduler), "the scheduler to stop admitting")
    runner.open()
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


CHILD = """
import json, sys
import jaxport
from jaxport.application.generation.schedulers import scheduler_for
from jaxport.domain.generation.scheduling import GenerationRequest, stream_tokens
scheduler = scheduler_for(jaxport.load_generator(sys.argv[1]), 2, 0)
streams = [scheduler.submit(GenerationRequest((1, 2, 3), 4)), scheduler.submit(GenerationRequest((4,), 4))]
print(json.dumps([stream_tokens(s, 60)[0] for s in streams] + [scheduler.continuous]))
scheduler.close(0.0)
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in ("jax", "jaxlib"))))
"""


@pytest.mark.parametrize("model", ["continuous-onnx"], indirect=True)
def test_the_continuous_scheduler_serves_an_onnx_directory_without_importing_jax(model: tuple[str, Path]) -> None:
    out = subprocess.run([sys.executable, "-c", CHILD, str(model[1])], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    tokens, loaded = out.stdout.strip().splitlines()[-2:]
    assert json.loads(tokens) == [gpt.reference(False, [1, 2, 3], 4), gpt.reference(False, [4], 4), True]
    assert json.loads(loaded) == []


#: The slots of :func:`fixed_batch_model`'s decode: the batch it was exported for.
FIXED = 4


@pytest.fixture(scope="module", params=["jax", "onnx"])
def fixed_batch_model(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The positions model whose decode was exported for :data:`FIXED` rows and its prefill for one (of any
    length), on JAX or converted to ONNX: a runtime whose decode runs every slot, whatever the slots in use,
    and whose prefill runs one request at a time."""
    import jax

    root = tmp_path_factory.mktemp(f"fixed-{request.param}")
    params = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), gpt.make_params())
    one = jax.ShapeDtypeStruct((FIXED, 1), "int32")
    step = jax.jit(gpt._positions_step)  # noqa: SLF001 - the model, its steps' batches fixed
    decode = jaxport.export(step)(params, one, one, gpt.empty_cache(FIXED, shared_index=False))
    length, = jaxport.symbolic_shape("s", constraints=(f"s <= {gpt.MAX_LENGTH}",))
    row = jax.ShapeDtypeStruct((1, length), "int32")
    prefill = jaxport.export(step)(params, row, row, gpt.empty_cache(1, shared_index=False))
    bundle = root / "bundle"
    jaxport.save_bundle(bundle, {"prefill": prefill, "decode": decode}, gpt.make_params(), generation=gpt.spec(False))
    if request.param == "jax":
        return bundle
    jaxport.to_onnx(bundle, root / "onnx")
    return root / "onnx"


def test_a_decode_of_a_fixed_batch_runs_every_slot_and_each_request_gets_its_tokens_alone(
        fixed_batch_model: Path) -> None:
    generator = jaxport.load_generator(fixed_batch_model)
    wrapped, runner = gated(generator)
    requests = [GenerationRequest((1, 2, 3), 8), GenerationRequest((7,), 12), GenerationRequest((4, 5), 5)]
    scheduler = scheduler_for(wrapped, FIXED, len(requests))
    assert scheduler.continuous
    try:
        runner.gate.clear()
        first = scheduler.submit(requests[0])
        runner.permits.release(3)  # its prefill and two decodes, over one row of the four
        got = [token for token in (first.next(WAIT).token for _ in range(3)) if token is not None]
        until(runner.waiting.is_set, "the fourth step to wait")
        rest = [scheduler.submit(r) for r in requests[1:]]
        runner.open()
        results = [stream_tokens(first, WAIT)] + [stream_tokens(s, WAIT) for s in rest]
    finally:
        runner.open()
        scheduler.close(WAIT)
    results[0] = (got + results[0][0], results[0][1])
    assert results == [(gpt.reference(False, list(r.prompt), r.max_new_tokens), FinishReason.LENGTH) for r in requests]
    rows = [len(p) for f, p in runner.steps if f == "decode"]
    assert rows[:2] == [1, 1] and FIXED in rows and 2 in rows  # fewer rows than the decode's batch, and all


def test_a_prefill_of_one_row_prefills_requests_that_join_together_one_at_a_time(fixed_batch_model: Path) -> None:
    requests = [GenerationRequest((1, 2, 3), 8), GenerationRequest((9, 8, 7), 7), GenerationRequest((5, 1, 4), 5)]
    runner, results = joined_at_one_step(jaxport.load_generator(fixed_batch_model), FIXED, requests)
    assert not runner.prefills_together
    assert results == [(gpt.reference(False, list(r.prompt), r.max_new_tokens), FinishReason.LENGTH)
                       for r in [GenerationRequest((2,), 4)] + requests]
    assert [f for f, _ in runner.steps if f.startswith("prefill")] == [f"prefill@{slot}" for slot in range(4)]
