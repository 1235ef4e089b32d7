"""Atomic file writes: a reader sees a file's old content or its new, never a part.

A bundle directory is the same idea one level up (:mod:`.atomic_directory` writes a
temporary directory and renames it into place, with :func:`fsync_directory`).

Temporaries that will take a target's place are created with the permissions
of a new file: :func:`tempfile.mkstemp` and :func:`tempfile.mkdtemp` create
their files and directories private (0600, 0700): right for scratch space,
wrong for a file that is renamed into place for others to read. Here the
caller creates the temporary itself (``os.open`` with 0666, ``os.mkdir`` with
0777; :func:`create_beside`), so the kernel applies the umask, and any default
ACL of the directory, exactly as for ``open()`` and ``os.makedirs``; no umask
is read (``os.umask`` can only be read by setting it, which races with other
threads).
"""

from __future__ import annotations

import contextlib
import mmap
import os
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, TypeVar

_T = TypeVar("_T")
_TRIES = 100
_CHUNK = 1 << 24


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
    target = Path(path)
    fd, tmp_name = create_beside(target, ".tmp", new_file(mode))
    try:
        with os.fdopen(fd, "wb") as tmp:
            write_all(tmp, data)
            tmp.flush()
            os.fsync(tmp.fileno())
        os.replace(tmp_name, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    fsync_directory(target.parent)


def write_all(stream: BinaryIO, data: bytes | bytearray | memoryview | mmap.mmap) -> None:
    """Writes ``data`` to ``stream`` in chunks of 16 MiB (a large buffer is never copied whole)."""
    view = memoryview(data)
    for start in range(0, len(view), _CHUNK):
        stream.write(view[start:start + _CHUNK])


def fsync_directory(directory: Path) -> None:
    """Flushes a directory's entries to disk, where the system allows it."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def create_beside(target: Path, suffix: str, create: Callable[[str], _T]) -> tuple[_T, str]:
    """Creates a temporary in ``target``'s directory, named ``.<target name>.<random><suffix>``.

    Args:
        target: what the temporary will replace.
        suffix: the end of the temporary's name.
        create: makes the file or directory at the path it is given, raising
            ``FileExistsError`` when that name is taken (another is then tried).

    Returns:
        What ``create`` returned, and the temporary's path.

    Raises:
        FileExistsError: every name tried was taken.
    """
    for _ in range(_TRIES):
        name = os.path.join(target.parent, f".{target.name}.{os.urandom(6).hex()}{suffix}")
        try:
            return create(name), name
        except FileExistsError:
            continue
    raise FileExistsError(f"No free temporary name beside {target} after {_TRIES} tries")


def new_file(mode: int = 0o666) -> Callable[[str], int]:
    """A ``create`` for :func:`create_beside`: opens a new file for writing, returns its descriptor.

    Args:
        mode: as for ``os.open``; the file gets ``mode`` less the umask.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    return lambda name: os.open(name, flags, mode)


def new_directory(name: str) -> None:
    """A ``create`` for :func:`create_beside`: a directory with mode 0777 less the umask."""
    os.mkdir(name, 0o777)
