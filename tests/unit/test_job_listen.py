"""A request's stream wakes a reader that must not block (``Job.listen``): after each event, and at once for
one that came before it listened."""

from __future__ import annotations

import pytest

from jaxport.application.generation.admission import Job
from jaxport.domain.errors import GenerationError
from jaxport.domain.generation.loop import Layout, Padding
from jaxport.domain.generation.scheduling import FinishReason, GenerationRequest, StreamEvent

ONE = Layout(Padding.NONE, 1)


def test_listen_wakes_at_once_for_an_event_waiting_then_after_each_event() -> None:
    job = Job(GenerationRequest((1,), 3), ONE, lambda _: None)
    woken: list[int] = []
    job.emit(5)
    job.listen(lambda: woken.append(len(woken)))
    assert woken == [0]  # the token put before it listened
    job.emit(6)
    job.finish(FinishReason.LENGTH)
    job.finish(FinishReason.STOP)  # a second end is dropped: no wake either
    assert len(woken) == 3
    assert [job.next(0.0) for _ in range(3)] == [StreamEvent(5), StreamEvent(6), StreamEvent(None, FinishReason.LENGTH)]
    with pytest.raises(TimeoutError):
        Job(GenerationRequest((1,), 3), ONE, lambda _: None).next(0.0)  # nothing ready: no wait


def test_listen_wakes_for_a_failure_and_for_an_end_already_read() -> None:
    job = Job(GenerationRequest((1,), 3), ONE, lambda _: None)
    woken: list[str] = []
    job.listen(lambda: woken.append("fail"))
    assert woken == []
    job.fail(GenerationError("model", "gone"))
    assert woken == ["fail"]
    with pytest.raises(GenerationError, match="gone"):
        job.next(0.0)
    job.listen(lambda: woken.append("again"))  # the end was read: it is still there to read
    assert woken == ["fail", "again"]
