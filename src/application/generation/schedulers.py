"""The scheduler that serves a generator, and how it runs requests: :func:`scheduler_for`, :func:`scheduling_of`."""

from __future__ import annotations

from jaxport.application.generation.admission import check_count
from jaxport.application.generation.continuous import ContinuousScheduler
from jaxport.application.generation.generator import Generator
from jaxport.application.generation.serial import SerialScheduler
from jaxport.domain.generation.loop import per_row
from jaxport.domain.generation.ports import SlotRunner
from jaxport.domain.generation.scheduling import Scheduler, Scheduling
from jaxport.domain.generation.spec import StepInput

#: What a model needs for continuous batching, in the terms of docs/serving.md.
_HOW = ("for continuous batching, export the prefill and the decode with per-row positions and no mask "
        "(GenerationSpec's default inputs: tokens, positions, cache), a batch axis on every cache leaf, and run "
        "them on JAX, ONNX Runtime or a SavedModel (docs/serving.md, 'Continuous batching')")


def scheduling_of(generator: Generator, max_slots: int) -> Scheduling:
    """How :func:`scheduler_for` runs ``generator``'s requests with ``max_slots``, and why.

    Continuous where the model's decode takes per-row positions, every cache
    leaf has a batch axis and the runtime can fill one row of its cache (JAX,
    ONNX Runtime, TensorFlow); else one at a time, ``max_slots`` unused.
    """
    spec = generator.spec
    if per_row(spec) and isinstance(generator.runner, SlotRunner):
        return Scheduling(True, max_slots, "the decode takes per-row positions and the runtime fills one row "
                                           "of the cache at a time")
    shared = [leaf.name or "cache" for leaf in spec.cache if leaf.batch_axis is None]
    if not all(StepInput.POSITIONS in inputs for _, inputs in spec.steps):
        why = "the decode takes a mask and no per-row positions: every row of a batch is at one position"
    elif shared:
        why = f"the cache leaf {shared[0]!r} has no batch axis (one write position shared by the batch)"
    else:
        why = f"its runtime's runner ({type(generator.runner).__name__}) cannot fill one row of the cache"
    return Scheduling(False, 1, f"{why}; --max-slots {max_slots} does not apply: {_HOW}")


def scheduler_for(generator: Generator, max_slots: int, max_queue: int) -> Scheduler:
    """The scheduler that serves ``generator`` to many callers (its runner is the scheduler's from now on).

    Continuous (requests join a running batch of ``max_slots`` rows between
    steps) or serial (one request at a time, ``max_slots`` unused), as
    :func:`scheduling_of` says. Either way, at most ``max_queue`` requests wait.

    Raises:
        GenerationError: ``max_slots`` or ``max_queue`` is not a count (at least 1, at least 0).
    """
    check_count("max_slots", max_slots, 1)
    runner = generator.runner
    if scheduling_of(generator, max_slots).continuous and isinstance(runner, SlotRunner):
        return ContinuousScheduler(generator, runner, max_slots, max_queue)
    return SerialScheduler(generator, max_queue)
