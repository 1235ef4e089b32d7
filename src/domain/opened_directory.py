"""The directories jaxport wrote, opened once: the ports that storage implements.

Beside :mod:`jaxport.domain.path_kind`, whose kinds they speak (the other ports are in
:mod:`jaxport.domain.ports`; the domain's packages import in one direction, and a bundle's manifest is
below the kinds of paths).
"""

from __future__ import annotations

import os
from typing import Any, Protocol, TypeVar

from jaxport.domain.path_kind import PathKind

_Manifest = TypeVar("_Manifest")


class OpenedDirectory(Protocol[_Manifest]):
    """A bundle (its manifest a :class:`~jaxport.domain.bundle.manifest.Manifest`) or a converted directory
    (a :class:`~jaxport.domain.converted.manifest.ConvertedManifest`), opened once
    (:class:`~jaxport.adapters.storage.opened_directory.DiskDirectory`): its kind read, its manifest parsed
    once, its listing checked against it. What reads the directory then asks it, never the path: a file that
    jaxport reads itself is checked at read, from the bytes handed back; the files a runtime opens by path are
    checked once before it opens them.

    Attributes:
        root: the directory's path.
        kind: ``PathKind.BUNDLE`` or ``PathKind.CONVERTED``.
        manifest: the manifest, parsed once.
        manifest_bytes: its bytes (their digest names the directory's verification).
    """

    root: str
    kind: PathKind
    manifest: _Manifest
    manifest_bytes: bytes

    def read(self, file: str) -> bytes:
        """The bytes of ``file`` (a path relative to the root), their digest checked.

        Raises:
            ArtifactError: the digest differs from the manifest's (the message names the file).
        """

    def opened_by_path(self) -> str:
        """The root, once every file that a runtime may open by path (all but the golden examples and the
        tokenizer, which jaxport reads itself; the weights too) was found equal to its record.

        Raises:
            ArtifactError: a file's digest differs from the manifest's.
        """

    def check_every_file(self) -> None:
        """Checks the digest of every file, those jaxport reads itself too (``jaxport check``).

        Raises:
            ArtifactError: a file's digest differs from the manifest's (the message names it).
        """

    def weights(self) -> Any:
        """The weights file, memory-mapped, its header and each weight checked against the manifest (None
        without one): ``array(name, dtype)`` views a weight as a read-only array, ``buffer`` is the whole
        file and ``header`` its header.

        Raises:
            ArtifactError: the header or a weight differs from the manifest.
        """


class Directories(Protocol):
    """Opens the directories that jaxport wrote (:class:`~jaxport.adapters.storage.opened_directory.DiskDirectories`)."""

    def open(self, path: str | os.PathLike[str], *wanted: PathKind) -> OpenedDirectory[Any]:
        """The directory at ``path``, opened: one of ``wanted`` (``PathKind.BUNDLE``, ``PathKind.CONVERTED``).

        Raises:
            ArtifactError: ``path`` is something else (the message says what, and what reads it), its
                manifest is damaged or of a newer format, or a file is missing, extra, truncated or longer
                than recorded.
            OSError: ``path`` is not a readable directory.
        """
