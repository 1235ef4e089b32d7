"""Loading converted directories: :func:`load_converted`, :func:`load_iree`, :func:`verify_converted`.

Each runs the process's one :class:`~jaxport.application.conversion.model.ConvertedLoader`, built on first
use in the composition root (:func:`jaxport.application.wiring.converted_loader`).
"""

from __future__ import annotations

import os
from typing import Any

from jaxport.application import wiring
from jaxport.application.conversion.model import ConvertedModel, read_converted
from jaxport.application.conversion.verify_directory import DirectoryVerification
from jaxport.domain.errors import ArtifactError


def load_converted(path: str | os.PathLike[str], *, verify: bool = True, **runtime_options: Any) -> ConvertedModel:
    """The functions of the directory that :func:`jaxport.convert` wrote at ``path``, for any target.

    Before the runtime reads anything, the directory is checked against its
    manifest (exactly its files, each of the recorded size and SHA-256
    digest) and its target against this machine. Compiled code (a
    ``.vmfb``) is native code: load only directories you trust; the digests
    detect damage, not malice.

    Args:
        path: the directory.
        runtime_options: the runtime's own options (IREE: ``driver="local-sync"``).

    Raises:
        ArtifactError: the manifest is missing, damaged or of another format,
            or a file is missing, extra, truncated or changed, or the runtime
            cannot open it or finds in it another signature, or it failed
            verification (the message names the directory, the file and why).
        TargetMismatchError, PlatformMismatchError: the directory cannot run on this machine.
        MissingExtraError: the target's runtime is not installed (the message names the extra).
        UsageError: an unknown runtime option, or a bad value.
        OSError: ``path`` is not a readable directory.
    """
    return wiring.converted_loader().load(path, verify=verify, **runtime_options)


def verify_converted(path: str | os.PathLike[str], **runtime_options: Any) -> DirectoryVerification:
    """What verifying the directory at ``path`` finds (``jaxport check DIR``), its runtime not opened here.

    Raises:
        As :func:`load_converted`, but a directory that fails verification gives ``ok=False``.
    """
    return wiring.converted_loader().verify(path, **runtime_options)


def load_iree(path: str | os.PathLike[str], *, driver: str = "local-task", verify: bool = True) -> ConvertedModel:
    """``load_converted(path, driver=driver, verify=verify)`` for a directory that :func:`jaxport.to_iree` wrote.

    ``driver``: IREE's CPU driver: ``"local-task"`` runs a call's work on a
    pool of threads, one per core; ``"local-sync"`` on the calling thread.

    Raises:
        As :func:`load_converted`; ``ArtifactError`` when the directory is another target's.
    """
    manifest, _ = read_converted(path)
    if manifest.target != "iree":
        raise ArtifactError(f"{path} is a {manifest.target} directory, not IREE's: use jaxport.load_converted")
    return load_converted(path, driver=driver, verify=verify)
