"""Artifacts for an older consumer: ``serialize(..., consumer="jax==0.9.2")`` and its callers.

The decision is the domain's (:func:`jaxport.domain.artifact.consumers.written_for`,
which ends with the same :func:`~jaxport.domain.artifact.consumers.verdict` that
``jaxport check --consumer`` gives); the modules are written for the consumer's
StableHLO by the verifying child process, so this process parses none.
"""

from __future__ import annotations

from jaxport.domain.artifact.consumers import find_consumer, written_for
from jaxport.domain.artifact.record import ArtifactRecord


def record_for_consumer(record: ArtifactRecord, consumer: str) -> ArtifactRecord:
    """``record`` (VJPs included) as the consumer ``RUNTIME==VERSION`` reads it.

    Raises:
        UsageError: ``consumer`` is malformed or not in the table of consumers.
        ConsumerMismatchError: the consumer would not read or run it (the reasons say why).
        ArtifactError: a module does not parse in the verifying process.
    """
    who = find_consumer(consumer)
    from jaxport.adapters.mlir.worker import ChildModuleForms
    from jaxport.adapters.mlir.worker import shared_worker as module_worker

    return written_for(record, who, ChildModuleForms(module_worker()).written_for)
