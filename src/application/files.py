"""Saving and loading artifacts as files."""

from __future__ import annotations

import os

from ..adapters.files import AtomicFileStore
from .exported import Exported
from .serialization import deserialize


def save(exported: Exported, path: str | os.PathLike[str], *, vjp_order: int = 0) -> None:
    """Writes ``exported.serialize(vjp_order)`` to ``path`` atomically.

    A failure at any point (serialization, a full disk, an interrupt) leaves
    the file that was at ``path`` intact and no temporary file behind.
    """
    AtomicFileStore().write(path, artifact_bytes(exported, vjp_order))


def artifact_bytes(exported: Exported, vjp_order: int = 0) -> bytes | bytearray:
    """The bytes that :func:`save` writes for ``exported`` (bundles write the same per function)."""
    return exported.serialize(vjp_order)


def load(path: str | os.PathLike[str]) -> Exported:
    """The :class:`Exported` stored at ``path`` (by jaxport or ``jax.export``).

    Raises:
        ArtifactError: the file is not a valid artifact.
    """
    return deserialize(AtomicFileStore().read(path))
