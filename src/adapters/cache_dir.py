"""Where jaxport keeps what it caches on disk (compiled executables, verdicts).

One directory for the whole process, chosen by ``JAXPORT_CACHE_DIR``:

- unset: the user's cache directory, ``$XDG_CACHE_HOME/jaxport`` or
  ``~/.cache/jaxport``;
- set to an empty string: caching is off (:func:`cache_root` returns None);
- set to a path: that path.

The directory is created private to the user (mode 0700) on first use.
Nothing here is read at import time: the environment is consulted on each
call, so tests and deployment scripts can switch it per process.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "JAXPORT_CACHE_DIR"


def cache_root() -> Path | None:
    """The cache directory, created with mode 0700, or None when caching is off.

    A directory that cannot be created (read-only home, say) also turns
    caching off rather than failing the caller.
    """
    configured = os.environ.get(ENV_VAR)
    if configured is None:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = Path(base) / "jaxport"
    elif configured == "":
        return None
    else:
        root = Path(configured).expanduser()
    try:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        return None
    return root


def cache_subdir(name: str) -> Path | None:
    """``cache_root() / name``, created with mode 0700; None when caching is off."""
    root = cache_root()
    if root is None:
        return None
    sub = root / name
    try:
        sub.mkdir(mode=0o700, exist_ok=True)
    except OSError:
        return None
    return sub
