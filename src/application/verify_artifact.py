"""``jaxport.verify_artifact``: the composition root's artifact verifier, on an artifact's bytes or file.

The service and its report are :mod:`jaxport.application.export.verifier`'s; this thin module asks
:func:`jaxport.application.wiring.artifact_verifier` for the process's one.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

from jaxport.application import wiring
from jaxport.application.export.verifier import VerificationReport as VerificationReport

if TYPE_CHECKING:
    from jaxport.adapters.mlir.worker import ModuleWorker


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
