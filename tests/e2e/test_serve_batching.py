"""End to end: ``jaxport serve --batch`` joins concurrent requests into one call, counted, not timed.

Requests are held behind a barrier and the batch delay is ten minutes, so a
call runs exactly when ``--max-batch-size`` rows wait: what the metrics
count is then exact. The IREE directory has ``predict`` compiled for
b = 1, 4, 8: a joined call of 3 rows runs at 4 with one row of padding.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import jaxport
from tests.helpers import iree_model as model
from tests.helpers.serving import Server, infer_http, shared_directories

HELD = ("--batch", "predict", "--max-batch-size", "3", "--max-batch-delay-ms", "600000")


@pytest.fixture(scope="module")
def iree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shared_directories(tmp_path_factory)[1]


@pytest.fixture(scope="module")
def server(iree: Path) -> Iterator[Server]:
    running = Server(iree, HELD, iree.parent / "held.log").start()
    yield running
    assert running.stop() == 0, running.output()


def together(calls: list[Callable[[], Any]]) -> list[Any]:
    """Runs the calls on threads released at once by a barrier; their results (or errors), in order."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def run(i: int) -> None:
        barrier.wait(30)
        try:
            results[i] = calls[i]()
        except Exception as exc:  # noqa: BLE001 - checked by the test
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)
    return results


def row(seed: int) -> np.ndarray:
    return model.token_ids(1, seed=seed)


def test_requests_held_behind_a_barrier_run_as_one_padded_call_and_each_gets_its_own_rows(
        server: Server, iree: Path) -> None:
    seeds = (11, 12, 13)
    def call(seed: int) -> Callable[[], Any]:
        return lambda: infer_http(server, "predict", {"arg0": row(seed)}, ["output_0"], binary=seed % 2 == 0)

    results = together([call(s) for s in seeds])
    own = jaxport.load_iree(iree)["predict"]
    for seed, result in zip(seeds, results):
        assert isinstance(result, dict), result
        np.testing.assert_allclose(result["output_0"], own(row(seed)), rtol=1e-5, atol=1e-5)
    assert server.metric("jaxport_calls_total", function="predict", batched="true") == 1
    assert server.metric("jaxport_batch_requests_sum", function="predict") == 3
    assert server.metric("jaxport_batch_rows_sum", function="predict") == 3
    assert server.metric("jaxport_padding_rows_total", function="predict") == 1


def test_a_function_not_named_is_never_joined(server: Server) -> None:
    ids = model.token_ids(2)
    results = together([lambda: infer_http(server, "loss", {"arg0": ids, "arg1": ids}, ["output_0"], binary=True)
                        for _ in range(3)])
    assert all(isinstance(r, dict) for r in results), results
    assert server.metric("jaxport_calls_total", function="loss", batched="false") == 3
    assert server.metric("jaxport_batch_requests_count", function="loss") == 0


def test_a_bad_request_is_refused_alone_and_never_joined(server: Server) -> None:
    before = server.metric("jaxport_calls_total", function="predict", batched="true")
    with pytest.raises(Exception, match="ShapeMismatchError"):
        infer_http(server, "predict", {"arg0": np.zeros((1, 9), np.int32)}, ["output_0"], binary=True)
    assert server.metric("jaxport_waiting_rows", function="predict") == 0
    assert server.metric("jaxport_calls_total", function="predict", batched="true") == before


def test_a_function_whose_outputs_do_not_lead_with_the_batch_dimension_is_refused_at_start(iree: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "jaxport", "serve", str(iree), "--http-port", "0",
                           "--grpc-port", "0", "--batch", "loss"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "--batch loss: its out ('output_0', dims []) does not lead with the batch dimension variable b" \
        in done.stderr


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.05)


def test_sigterm_answers_the_request_the_batcher_holds_and_a_killed_server_restarts(
        iree: Path, tmp_path: Path) -> None:
    first = Server(iree, HELD, tmp_path / "first.log").start()
    held: list[Any] = []
    thread = threading.Thread(target=lambda: held.append(
        infer_http(first, "predict", {"arg0": row(5)}, ["output_0"], binary=True)))
    thread.start()
    wait_for(lambda: first.metric("jaxport_waiting_rows", function="predict") == 1, "the batcher holds the request")
    assert first.stop(signal.SIGTERM) == 0, first.output()
    thread.join(60)
    assert len(held) == 1
    np.testing.assert_allclose(held[0]["output_0"], jaxport.load_iree(iree)["predict"](row(5)), rtol=1e-5, atol=1e-5)

    again = Server(iree, (), tmp_path / "again.log", first.http_port, first.grpc_port).start()
    assert again.stop(signal.SIGKILL) == -signal.SIGKILL
    with pytest.raises(Exception):
        again.http().is_server_ready()
    restarted = Server(iree, (), tmp_path / "restarted.log", first.http_port, first.grpc_port).start()
    try:
        assert restarted.http().is_server_ready()
        assert infer_http(restarted, "predict", {"arg0": row(6)}, ["output_0"], binary=False)["output_0"].shape \
            == (1, 8, model.VOCAB)
    finally:
        assert restarted.stop() == 0, restarted.output()
