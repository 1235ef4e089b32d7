"""The scheduler that serves a generator: :func:`scheduler_for`."""

from __future__ import annotations

from jaxport.application.generation.admission import check_count
from jaxport.application.generation.continuous import ContinuousScheduler
from jaxport.application.generation.generator import Generator
from jaxport.application.generation.serial import SerialScheduler
from jaxport.domain.generation.loop import per_row
from jaxport.domain.generation.ports import SlotRunner
from jaxport.domain.generation.scheduling import Scheduler


def scheduler_for(generator: Generator, max_slots: int, max_queue: int) -> Scheduler:
    """The scheduler that serves ``generator`` to many callers (its runner is the scheduler's from now on).

    Continuous (requests join a running batch of ``max_slots`` rows between
    steps) where the model's decode takes per-row positions, every cache leaf
    has a batch axis and the runtime can fill one row of its cache (JAX, ONNX
    Runtime, TensorFlow); else serial (one request at a time, ``max_slots`` unused).
    Either way, at most ``max_queue`` requests wait.

    Raises:
        GenerationError: ``max_slots`` or ``max_queue`` is not a count (at least 1, at least 0).
    """
    check_count("max_slots", max_slots, 1)
    runner = generator.runner
    if per_row(generator.spec) and isinstance(runner, SlotRunner):
        return ContinuousScheduler(generator, runner, max_slots, max_queue)
    return SerialScheduler(generator, max_queue)
