"""Reading a checked directory (:mod:`jaxport.domain.checked_directory`): a bundle or a converted directory.

:func:`listing` reads what the directory holds (without following a link),
:func:`check_digests` checks the files' digests, streamed; the domain
decides. Both kinds of directory use them.

The known-file check: a file whose digest was checked before is known again by
its identity, and a later load skips hashing it. Checking a weights file of 93 MB against its manifest costs a fresh process
about 60 ms and maps every page of the file into its memory (its peak
resident memory grows by the file's size), on every load. A file's identity
is what the system says of it without reading it: its device and inode, its
size, and its modification and change times in nanoseconds. A write to the
file changes its change time, which no unprivileged process can set back;
a file replaced by another under the same name has another inode or times.
So a file whose identity is the one it had when its digest was checked
holds the bytes checked then, and its digest is not computed again.

Two rules keep that true:

- a check is remembered only when the file had *settled* by then (its
  change time at least :data:`SETTLED_NS` old), so that a write in the same
  clock tick as the check, which could leave the times as they were, cannot
  go unseen;
- the identity that counts is the one of the file actually opened (``fstat``
  of its descriptor, which the caller then reads or maps), not of the name.

The checks are kept in the verdict store (:mod:`.verdict_store`, private to
the user); ``JAXPORT_CACHE_DIR=""`` turns remembering off.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from jaxport.domain.artifact.verification import Verdict, verdict_key
from jaxport.domain.checked_directory import FOLDER, NOT_A_FILE, FileDigest, check_digest
from jaxport.domain.ports import KnownFiles, VerdictStore

#: How old a file's change time must be for its check to be remembered (2 s: far above any clock tick).
SETTLED_NS: Final = 2_000_000_000
#: Bumped when what a remembered check covers changes.
_VERSION: Final = 1


@dataclass(frozen=True, slots=True)
class FileIdentity:
    """What the system says of an open file without reading it."""

    device: int
    inode: int
    size: int
    mtime_ns: int
    ctime_ns: int

    @classmethod
    def of(cls, status: os.stat_result) -> FileIdentity:
        """The identity in ``status`` (``os.fstat`` of the descriptor that is read)."""
        return cls(status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns)

    def settled(self, now_ns: int) -> bool:
        """Whether the file was last changed at least :data:`SETTLED_NS` before ``now_ns``."""
        return now_ns - max(self.mtime_ns, self.ctime_ns) >= SETTLED_NS


class StatKnownFiles:
    """The files whose digests were found equal to a manifest's, by identity (the
    :class:`~jaxport.domain.ports.KnownFiles` port), remembered in a verdict store.

    Args:
        store: where the checks are remembered.
    """

    def __init__(self, store: VerdictStore) -> None:
        self._store = store

    def known(self, identity: FileIdentity, digest: str) -> bool:
        """Whether the file of ``identity`` was found to have ``digest`` (what its manifest records)."""
        remembered = self._store.get(self._key(identity, digest))
        return remembered is not None and remembered.ok

    def remember(self, identity: FileIdentity, digest: str, now_ns: int | None = None) -> None:
        """Remembers that the file of ``identity`` has ``digest`` (just computed from the bytes read
        through the descriptor ``identity`` describes), unless it has not settled."""
        if identity.settled(time.time_ns() if now_ns is None else now_ns):
            self._store.put(self._key(identity, digest), Verdict(True))

    def check(self, path: str | os.PathLike[str], status: os.stat_result, digest: str,
              compute: Callable[[], str]) -> str:
        """The port's check, the file known by its :class:`FileIdentity`: ``compute()`` is remembered
        when it is ``digest`` and the file at ``path`` still has that identity."""
        identity = FileIdentity.of(status)
        if self.known(identity, digest):
            return digest
        found = compute()
        if found == digest and still(path, identity):
            self.remember(identity, digest)
        return found

    @staticmethod
    def _key(identity: FileIdentity, digest: str) -> str:
        return verdict_key(f"f{_VERSION}", digest, identity.device, identity.inode, identity.size,
                           identity.mtime_ns, identity.ctime_ns)


def still(path: str | os.PathLike[str], identity: FileIdentity) -> bool:
    """Whether the file at ``path`` still has ``identity`` (after its bytes were read and hashed)."""
    try:
        return FileIdentity.of(os.stat(path)) == identity
    except OSError:
        return False


def listing(root: Path) -> dict[str, int]:
    """Everything under ``root`` by its path relative to ``root`` (``/``-separated): a regular file's
    size, :data:`~jaxport.domain.checked_directory.FOLDER` for a folder (whose entries are listed
    too), :data:`~jaxport.domain.checked_directory.NOT_A_FILE` for the rest (a link is not followed).

    Raises:
        OSError: ``root`` is not a readable directory.
    """
    found: dict[str, int] = {}
    with os.scandir(root) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                found[entry.name] = FOLDER
                found.update({f"{entry.name}/{k}": v for k, v in listing(Path(entry.path)).items()})
            else:
                found[entry.name] = entry.stat().st_size if entry.is_file(follow_symlinks=False) else NOT_A_FILE
    return found


def check_digests(root: Path, files: Mapping[str, FileDigest], names: Sequence[str], owner: str,
                  known: KnownFiles | None) -> None:
    """Checks the digests of the files ``names`` under ``root`` against ``files``, each streamed (a
    SavedModel's variables may be large); with ``known``, a file checked before and unchanged since
    is not hashed again.

    Raises:
        ArtifactError: a file's digest differs (the message names it).
    """
    for name in names:
        with open(root / name, "rb") as file:
            def digest() -> str:
                return hashlib.file_digest(file, "sha256").hexdigest()

            expected = files[name]
            found = digest() if known is None else known.check(root / name, os.fstat(file.fileno()),
                                                               expected.sha256, digest)
        check_digest(name, expected, found, owner)
