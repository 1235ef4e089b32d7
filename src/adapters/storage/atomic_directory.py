"""A directory written atomically (a bundle, a converted directory), a level up from :mod:`.atomic_files`.

The files go to a temporary directory beside the target (same parent, so the
same file system), each flushed and fsync'ed while its SHA-256 is computed
(on a second thread, as it is written);
then the manifest; then the temporary directory takes the target's place:
on Linux by exchanging the two names in one step (``renameat2`` with
``RENAME_EXCHANGE``), elsewhere by two renames. A failure at any point
removes the temporary directory and leaves the previous bundle as it was.

The directory and its files get the permissions that ``os.makedirs`` and
``open()`` would give them (0755 and 0644 under umask 022), so that another
user (a service account, a container's user) can serve the bundle.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from jaxport.domain.bundle.manifest import MANIFEST_FILE
from jaxport.domain.checked_directory import FileDigest
from .atomic_files import create_beside, fsync_directory, new_directory

Writer = Callable[[BinaryIO], object]


class _HashingWriter:
    """A binary stream that passes bytes on and keeps their size and SHA-256.

    The digest is computed on a second thread while the next bytes are
    written (hashlib and file writes release the GIL), so the bytes passed
    to :meth:`write` must not change until :meth:`digest` returns.
    """

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        from concurrent.futures import ThreadPoolExecutor  # here: 4 ms in a fresh process that only loads

        self._hash = hashlib.sha256()
        self._hashing = ThreadPoolExecutor(max_workers=1)  # one worker: the updates stay in order
        self.size = 0

    def write(self, data: Any) -> int:
        size = memoryview(data).nbytes
        self._hashing.submit(self._hash.update, data)
        self._stream.write(data)
        self.size += size
        return size

    def digest(self) -> FileDigest:
        """The size and SHA-256 of what was written, once every update is done."""
        self._hashing.shutdown(wait=True)
        return FileDigest(self.size, self._hash.hexdigest())


def sha256_many(buffers: Sequence[memoryview]) -> list[str]:
    """The SHA-256 (hex) of each buffer, computed on several threads (hashlib releases the GIL)."""
    return sha256_later(buffers)()


def sha256_later(buffers: Sequence[memoryview]) -> Callable[[], list[str]]:
    """Starts computing the SHA-256 of each buffer on background threads, which the caller can
    overlap with other work; the function returned waits for them and gives the hex digests.

    The buffers must not change until that function returns.
    """
    if len(buffers) <= 1:
        digests = [hashlib.sha256(b).hexdigest() for b in buffers]
        return lambda: digests
    from concurrent.futures import ThreadPoolExecutor  # here: 4 ms in a load that hashes one file

    pool = ThreadPoolExecutor(max_workers=min(len(buffers), os.cpu_count() or 1))
    futures = [pool.submit(lambda b: hashlib.sha256(b).hexdigest(), b) for b in buffers]
    pool.shutdown(wait=False)  # the threads end when the queue is done
    return lambda: [f.result() for f in futures]


def write_bundle(path: str | os.PathLike[str], files: Mapping[str, Writer],
                 manifest: Callable[[dict[str, FileDigest]], bytes], overwrite: bool = False) -> None:
    """Writes a bundle at ``path`` atomically.

    Args:
        path: the bundle directory; a previous bundle there is replaced.
        files: each file's name and the function that writes its bytes.
        manifest: makes ``manifest.json``'s bytes from the files' digests.
        overwrite: replace whatever is at ``path`` (a directory that is not a bundle, a file), in the same
            one step, once the new bundle is complete.

    Raises:
        FileExistsError: ``path`` exists and is not a bundle (no manifest), and ``overwrite`` is False.
    """
    target = Path(path)
    if not overwrite and os.path.lexists(target) and not (target / MANIFEST_FILE).is_file():
        raise FileExistsError(f"{target} exists and is not a bundle directory (it has no "
                              f"{MANIFEST_FILE}); not replacing it: pass overwrite=True to replace it")

    tmp = new_directory_beside(target)
    try:
        digests = {name: _write_file(tmp / name, writer) for name, writer in files.items()}
        data = manifest(digests)
        _write_file(tmp / MANIFEST_FILE, lambda s: s.write(data))
        move_into_place(tmp, target)
    except BaseException:
        discard(tmp)
        raise


def new_directory_beside(target: Path) -> Path:
    """A fresh, empty directory beside ``target`` (same parent, so the same file system) to fill and
    then :func:`move_into_place`; ``target``'s parent is made if missing."""
    target.parent.mkdir(parents=True, exist_ok=True)
    _, tmp_name = create_beside(target, ".tmp", new_directory)
    return Path(tmp_name)


def move_into_place(tmp: Path, target: Path) -> None:
    """Makes the filled directory ``tmp`` (from :func:`new_directory_beside`) take ``target``'s place
    in one step; whatever was at ``target`` is removed. On failure ``target`` is as it was, and the
    caller removes ``tmp`` with :func:`discard`."""
    fsync_directory(tmp)
    _swap_into_place(tmp, target)
    fsync_directory(target.parent)


def discard(tmp: Path) -> None:
    """Removes a directory from :func:`new_directory_beside` that will not take its place."""
    shutil.rmtree(tmp, ignore_errors=True)


def file_digests(root: Path) -> dict[str, FileDigest]:
    """The size and SHA-256 of every file under ``root``, by its path relative to ``root`` (``/``-separated)."""
    digests = {}
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        with open(file, "rb") as f:
            digest = hashlib.file_digest(f, "sha256").hexdigest()
        digests[file.relative_to(root).as_posix()] = FileDigest(file.stat().st_size, digest)
    return digests


def _write_file(path: Path, writer: Writer) -> FileDigest:
    with open(path, "xb") as f:
        hashing = _HashingWriter(f)
        try:
            writer(hashing)  # type: ignore[arg-type]
            f.flush()
            os.fsync(f.fileno())  # while the last bytes are hashed
        finally:
            digest = hashing.digest()
    return digest


def _swap_into_place(tmp: Path, target: Path) -> None:
    """Moves ``tmp`` to ``target``; afterwards ``tmp`` is gone (holding the old bundle, it is removed)."""
    if not os.path.lexists(target):
        os.rename(tmp, target)
        return
    if _exchange(tmp, target):
        if tmp.is_dir() and not tmp.is_symlink():
            shutil.rmtree(tmp, ignore_errors=True)
        else:  # what was at ``target`` was a file or a link (replaced with ``overwrite``)
            tmp.unlink(missing_ok=True)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
    os.rename(target, old / "bundle")
    try:
        os.rename(tmp, target)
    except BaseException:
        os.rename(old / "bundle", target)
        raise
    finally:
        shutil.rmtree(old, ignore_errors=True)


_RENAME_EXCHANGE = 2


def _exchange(a: Path, b: Path) -> bool:
    """Swaps the names ``a`` and ``b`` in one step; False where the system cannot."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes.util  # here: 6-10 ms in a fresh process that reads bundles only

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd = -100
    result = renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), _RENAME_EXCHANGE)
    return bool(result == 0)
