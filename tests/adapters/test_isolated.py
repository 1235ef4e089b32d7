"""The one isolated-child mechanism: a child answers in JSON lines with bytes, and each way it can stop
answering (a signal, its CPU limit, the deadline, garbage, an exit) is a :class:`ChildDied` saying how."""

from __future__ import annotations

import time

import pytest

from jaxport.adapters.isolated.parent import Child, ChildDied
from jaxport.errors import ArtifactError

CHILD = "tests.helpers.isolated_child"


def _child(*, cpu_seconds: int = 60, last_words: bool = False) -> Child:
    return Child(CHILD, address_space=0, cpu_seconds=cpu_seconds, last_words=last_words)


def _died(child: Child, request: dict[str, object], *, seconds: float = 60.0) -> ChildDied:
    with pytest.raises(ChildDied) as info, child.watch(time.monotonic() + seconds):
        child.send(request)
        child.receive(0)
    return info.value


def test_a_child_answers_each_request_with_its_bytes_and_ends_when_its_input_closes() -> None:
    child = _child()
    with child.watch(time.monotonic() + 60):
        for payload in (b"\x00\n" * 1000, b""):
            child.send({"do": "echo", "text": "a\nb"}, payload)
            assert child.receive(len(payload)) == ({"echo": "a\nb"}, payload)
    pid = child.pid
    assert pid is not None
    child.finish(time.monotonic() + 60)
    assert child.pid is None


def test_a_child_killed_by_a_signal_is_a_typed_error_naming_the_signal() -> None:
    died = _died(_child(), {"do": "crash"})
    assert isinstance(died, ArtifactError) and died.how == "it was killed by SIGSEGV" and not died.timed_out


def test_a_child_past_its_deadline_is_killed() -> None:
    died = _died(_child(), {"do": "hang"}, seconds=0.5)
    assert died.timed_out and died.how == "it did not answer in time"


def test_a_child_past_its_cpu_limit_dies_of_it() -> None:
    assert _died(_child(cpu_seconds=1), {"do": "spin"}).how == "it was killed by SIGXCPU"


def test_a_child_that_answers_garbage_or_too_much_is_killed() -> None:
    assert _died(_child(), {"do": "garbage"}).how == "it answered with a line that is not a JSON object"
    child = _child()
    with pytest.raises(ChildDied, match="over the limit of 3"), child.watch(time.monotonic() + 60):
        child.send({"do": "echo"}, b"four")
        child.receive(3)


def test_a_child_that_exits_is_reported_with_its_status_and_last_words() -> None:
    died = _died(_child(last_words=True), {"do": "exit"})
    assert died.how == "it exited with status 7" and died.last_words == "some last words"
