"""One request at a time, in the order they came: :class:`SerialScheduler`.

For a model whose decode shares one position across the batch (a cache with
one write index): rows cannot join a running batch, so each request runs
alone through :meth:`Generator.run_checked <jaxport.application.generation.generator.Generator.run_checked>`
(its tokens are exactly those of ``generate`` with the same seed), while the
next ones wait in the bounded queue.
"""

from __future__ import annotations

from jaxport.application.generation.admission import Job, WorkerScheduler, model_failed
from jaxport.application.generation.generator import Generator
from jaxport.domain.errors import GenerationError
from jaxport.domain.generation.scheduling import FinishReason


class SerialScheduler(WorkerScheduler):
    """A :class:`~jaxport.domain.generation.scheduling.Scheduler` that runs one request at a time.

    Args:
        generator: the model (its runner is the worker thread's alone from now on).
        max_queue: how many requests may wait behind the running one.
    """

    continuous = False

    def __init__(self, generator: Generator, max_queue: int) -> None:
        super().__init__(generator, 1, max_queue)

    def _serve(self) -> None:
        while (job := self._take(block=True)) is not None:
            try:
                self._run(job)
            finally:
                self._release(job)

    def _run(self, job: Job) -> None:
        """Streams one job's tokens, checking before each step whether it was cancelled."""
        r = job.request
        count = 0
        tokens = self._generator.run_checked([r.prompt], r.max_new_tokens, r.options, r.stop, job.layout)
        try:
            while not (job.cancelled.is_set() or self.past_grace()):
                token = next(tokens, None)
                if token is None:
                    job.finish(FinishReason.LENGTH if count == r.max_new_tokens else FinishReason.STOP)
                    return
                job.emit(token.id, token.logprob)
                count += 1
            job.finish(FinishReason.CANCELLED)
        except GenerationError as exc:
            job.fail(exc)
        except Exception as exc:  # the runtime failed: this request ends, the worker goes on
            job.fail(model_failed(exc))

