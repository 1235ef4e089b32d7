"""Artifact files: ``jaxport.save`` writes one atomically, ``jaxport.load`` reads (and verifies) one."""

from __future__ import annotations

import os
from collections.abc import Iterable

from jaxport.adapters.storage.atomic_files import write_atomically
from jaxport.adapters.storage.path_kind import path_kind
from jaxport.domain.path_kind import PathKind, require
from jaxport.domain.errors import ArtifactError
from jaxport.adapters.jax.exported.exported import Exported
from jaxport.application.export.serialization import deserialize


def save(exported: Exported, path: str | os.PathLike[str], *, vjp_order: int = 0,
         consumer: str | None = None) -> None:
    """Writes ``exported.serialize(vjp_order, consumer=consumer)`` to ``path`` atomically.

    The file always carries the jaxport trailer (a digest checked on load, and
    the symbolic constraints); ``jax.export.deserialize`` reads it too.

    With ``consumer`` (``"jax==0.9.2"``, ``"tf==2.21"``) the file holds what that
    release reads (see :meth:`Exported.serialize`); a consumer that would not
    read it raises (``UsageError``, ``ConsumerMismatchError``) before anything is written.

    A failure at any point (serialization, a full disk, an interrupt) leaves
    the file that was at ``path`` intact and no temporary file behind.
    """
    write_atomically(path, exported.serialize(vjp_order, consumer=consumer))


def load(path: str | os.PathLike[str], *, verify: bool = True,
         allowed_custom_calls: Iterable[str] = ()) -> Exported:
    """The :class:`Exported` stored at ``path`` (by jaxport or ``jax.export``).

    Args:
        path: the file.
        verify: parse and check every module in a separate process before
            this process sees it, and re-check its custom calls (see
            :func:`jaxport.application.verify_artifact.verify_artifact`); the
            verdict is remembered per digest, so loading the same bytes again
            costs a hash. False reads the file like :func:`jaxport.deserialize`.
        allowed_custom_calls: custom-call targets to accept besides those JAX
            guarantees stable; the artifact's own disabled checks do not count.

    Raises:
        ArtifactError: the file is not a valid artifact or fails verification, or is something else
            (a bundle, a converted directory, an ONNX model: the message says what reads it).
    """
    require(path_kind(path), path, PathKind.ARTIFACT)
    with open(path, "rb") as file:
        blob = file.read()
    try:
        return deserialize(blob, verify=verify, allowed_custom_calls=allowed_custom_calls)
    except ArtifactError as exc:
        raise ArtifactError(f"{os.fspath(path)}: {exc}") from exc
