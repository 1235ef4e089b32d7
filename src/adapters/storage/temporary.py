"""Temporaries that will take a target's place, created with the permissions of a new file.

:func:`tempfile.mkstemp` and :func:`tempfile.mkdtemp` create their files
and directories private (0600, 0700): right for scratch space, wrong for
a file that is renamed into place for others to read. Here the caller
creates the temporary itself (``os.open`` with 0666, ``os.mkdir`` with
0777), so the kernel applies the umask, and any default ACL of the
directory, exactly as for ``open()`` and ``os.makedirs``; no umask is read
(``os.umask`` can only be read by setting it, which races with other
threads).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

_T = TypeVar("_T")
_TRIES = 100


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
