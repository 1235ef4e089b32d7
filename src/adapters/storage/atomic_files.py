"""Atomic file writes: a reader sees a file's old content or its new, never a part.

A bundle directory is the same idea one level up (:mod:`.bundle_dir` writes a
temporary directory and renames it into place, with :func:`fsync_directory`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path


def write_atomically(path: str | os.PathLike[str], data: bytes | bytearray, *, mode: int = 0o666) -> None:
    """Writes ``data`` to ``path`` atomically.

    The bytes go to a temporary file in the same directory, which is
    flushed, fsync'ed and then renamed over ``path``; on any error the
    temporary file is removed and ``path`` keeps its previous content.

    Args:
        path: the file to write.
        data: its new content.
        mode: as for ``os.open``: the file ends with ``mode`` less the
            umask, as ``open()`` would make it (0644 under umask 022);
            0o600 keeps it private.
    """
    # Imported here: callers that only read need neither pathlib nor what it imports.
    from pathlib import Path

    from .temporary import create_beside, new_file

    target = Path(path)
    fd, tmp_name = create_beside(target, ".tmp", new_file(mode))
    try:
        with os.fdopen(fd, "wb") as tmp:
            _write_all(tmp, data)
            tmp.flush()
            os.fsync(tmp.fileno())
        os.replace(tmp_name, target)
    except BaseException:
        try:
            os.unlink(tmp_name)
        except FileNotFoundError:
            pass
        raise
    fsync_directory(target.parent)


def _write_all(tmp: object, data: bytes | bytearray) -> None:
    write = getattr(tmp, "write")
    view = memoryview(data)
    # Chunks keep a failure mid-write (disk full) from half-writing the target.
    for start in range(0, len(view), 1 << 20):
        write(view[start:start + (1 << 20)])


def fsync_directory(directory: Path) -> None:
    """Flushes a directory's entries to disk, where the system allows it."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
