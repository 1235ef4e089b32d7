"""Files whose digests were checked before, known again by their identity: a later load skips hashing them.

Checking a weights file of 93 MB against its manifest costs a fresh process
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
from dataclasses import dataclass
from typing import Final, Protocol

from jaxport.domain.artifact.verification import Verdict

#: How old a file's change time must be for its check to be remembered (2 s: far above any clock tick).
SETTLED_NS: Final = 2_000_000_000
#: Bumped when what a remembered check covers changes.
_VERSION: Final = 1


class VerdictStore(Protocol):
    """Where checks are remembered (:class:`~.verdict_store.FileVerdictStore`)."""

    def get(self, key: str) -> Verdict | None:
        """The verdict remembered under ``key``, if any."""

    def put(self, key: str, verdict: Verdict) -> None:
        """Remembers ``verdict`` under ``key`` (best effort)."""


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


class KnownFiles:
    """The files whose digests were found equal to a manifest's, by identity.

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

    @staticmethod
    def _key(identity: FileIdentity, digest: str) -> str:
        text = (f"{_VERSION}:{identity.device}:{identity.inode}:{identity.size}:{identity.mtime_ns}:"
                f"{identity.ctime_ns}:{digest}")
        return f"f{_VERSION}-" + hashlib.sha256(text.encode()).hexdigest()[:48]


def still(path: str | os.PathLike[str], identity: FileIdentity) -> bool:
    """Whether the file at ``path`` still has ``identity`` (after its bytes were read and hashed)."""
    try:
        return FileIdentity.of(os.stat(path)) == identity
    except OSError:
        return False
