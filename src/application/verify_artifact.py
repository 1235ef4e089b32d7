"""``jaxport.verify_artifact`` and ``jaxport.check_consumer``: the composition root's verifier and
verifying process, on an artifact's bytes or file (or a bundle, for the consumer check).

The services and their reports are :mod:`jaxport.application.export.verifier`'s and
:mod:`jaxport.application.consumer_check`'s; this thin module asks the composition root for them
(:func:`jaxport.application.wiring.artifact_verifier`, :func:`~jaxport.application.wiring.module_forms`).
It imports no JAX: the consumer check runs without it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

from jaxport.application import wiring
from jaxport.application.consumer_check import consumer_verdict

if TYPE_CHECKING:
    from jaxport.application.export.verifier import VerificationReport
    from jaxport.domain.artifact.consumers import Verdict
    from jaxport.domain.ports import ModuleWorker


def verify_artifact(source: bytes | bytearray | memoryview | str | os.PathLike[str], *,
                    allowed_custom_calls: Iterable[str] = (),
                    worker: ModuleWorker | None = None) -> VerificationReport:
    """Verifies an artifact's bytes (or the file at a path); never runs its module here.

    Args:
        source: the artifact's bytes, or the path of a file holding them.
        allowed_custom_calls: custom-call targets the caller accepts besides
            those JAX guarantees stable (``"ALL"`` accepts any). The artifact's
            own disabled safety checks are not consulted.
        worker: the verifying process (default: the process-wide one).

    Returns:
        The report; a bad artifact gives ``ok=False``, it does not raise.

    Raises:
        OSError: ``source`` is a path that cannot be read.
    """
    return wiring.artifact_verifier().verify(source, allowed_custom_calls=allowed_custom_calls, worker=worker)


def check_consumer(path_or_blob: str | os.PathLike[str] | bytes | bytearray, consumer: str) -> Verdict:
    """Whether ``consumer`` (``"jax==0.9.2"``, ``"tf==2.21"``) can read and run an artifact or a bundle.

    The answer comes from jaxport's table of consumers' windows
    (:mod:`jaxport.domain.artifact.consumers`): calling convention, StableHLO target
    and, for JAX, the fields of ``jax.export``'s format the artifact needs and the
    Mosaic version of its Pallas kernels: the same decision that ``serialize(consumer=...)``
    makes. Loads neither JAX nor jaxlib: the kernels of a module that holds some are
    read by the verifying process. For a bundle directory every function is
    checked; a reason names the function's file.

    Args:
        path_or_blob: an artifact file or its bytes, or a bundle directory.
        consumer: ``RUNTIME==VERSION``; RUNTIME is ``jax``, ``tf`` or ``tensorflow``.

    Returns:
        The verdict: ``.ok``, and the ``.reasons`` why not.

    Raises:
        UsageError: ``consumer`` is not in the table (the message lists its versions).
        ArtifactError: the bytes are not a valid artifact, or the bundle is damaged.
        OSError: the file cannot be read.
    """
    return consumer_verdict(path_or_blob, consumer, wiring.module_forms().kernels, wiring.directories())
