"""Reads what :mod:`jaxport.domain.path_kind` recognises a path by: a file's first bytes, a directory's manifests."""

from __future__ import annotations

import os
from pathlib import Path

from jaxport.domain.path_kind import HEAD_BYTES, PathKind, directory_kind, file_kind


def path_kind(path: str | os.PathLike[str]) -> PathKind:
    """What ``path`` holds (:class:`~jaxport.domain.path_kind.PathKind`); a file that cannot be read is taken
    for an artifact, whose reader then raises the ``OSError``."""
    root = Path(path)
    if root.is_dir():
        from jaxport.domain.checked_directory import manifest_format

        return directory_kind(manifest_format(data) for data in manifests(root).values())
    try:
        with open(root, "rb") as file:
            return file_kind(file.read(HEAD_BYTES), os.fstat(file.fileno()).st_size)
    except FileNotFoundError:
        return PathKind.MISSING
    except OSError:
        return PathKind.ARTIFACT


def manifests(root: Path) -> dict[str, bytes]:
    """The bytes of each manifest that the directory ``root`` holds, by its place (relative to ``root``)
    where a bundle's or a converted directory's manifest may be; empty where ``root`` is no directory."""
    # Here, not at the head: the registry imports the manifests' modules (the symbolic shapes'), which
    # recognising a file never needs (jaxport.inspect of an artifact loads none: tests/e2e/test_inspect.py).
    from jaxport.domain.targets.registry import TARGETS
    from jaxport.domain.checked_directory import MANIFEST_FILE

    found = {}
    for place in dict.fromkeys([MANIFEST_FILE, *(e.manifest_path for e in TARGETS.values())]):
        try:
            if (root / place).is_file():
                found[place] = (root / place).read_bytes()
        except OSError:
            continue
    return found

