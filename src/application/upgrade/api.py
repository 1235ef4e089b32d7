"""``jaxport.upgrade``: the upgrade service (:mod:`.service`) as the composition root builds it."""

from __future__ import annotations

import os

from jaxport.application import wiring
from .service import UpgradeReport


def upgrade(old: str | os.PathLike[str], new: str | os.PathLike[str], *,
            consumer: str | None = None) -> UpgradeReport:
    """Reads the artifact at ``old`` and writes it again, sealed, at the newest format version.

    ``old`` may be in any layout that jaxport or ``jax.export`` ever wrote,
    including what JAX 0.11.1 and later refuse: HLO sharding protos (mapped
    onto named shardings where one places the same slices on the same
    devices), the legacy ``in_avals``/``out_avals`` vectors, abstract devices
    without a platform, a device count in the 16-bit field. The result is
    what this jaxport writes for a fresh export on the installed JAX (its
    format version and JAX version recorded), or, with ``consumer``, what that
    release reads (as ``serialize(consumer=...)`` writes). A module's own GSPMD
    sharding annotations are kept as they are (a note says so). ``old`` and
    ``new`` may be the same file: it is replaced whole or not at all.

    Args:
        old: the artifact to read.
        new: where to write the renewed artifact.
        consumer: ``RUNTIME==VERSION`` (``"jax==0.9.2"``): write what that release reads.

    Returns:
        What was written, and notes on what was mapped or kept.

    Raises:
        ArtifactError: ``old`` is not a valid artifact (a changed byte under its seal, a cut, a
            field out of range, a module that does not parse); nothing is written.
        UpgradeRefusedError: something of it cannot be carried forward; the message names the
            field and why; nothing is written.
        UsageError, ConsumerMismatchError: ``consumer`` is not in the table, or would not read the
            artifact (as for ``save(consumer=...)``); nothing is written.
        OSError: ``old`` cannot be read or ``new`` written.
    """
    return wiring.upgrade_service().upgrade(old, new, consumer=consumer)
