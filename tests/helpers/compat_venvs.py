"""Virtual environments with older JAX releases, for the compatibility matrix.

Each release gets a virtual environment of its own under ``build/compat/``
(``build/compat/jax-0.8.3``) with ``jax``, ``jaxlib`` (CPU wheels) and
``flatbuffers`` from the package registry. It is made on first use and reused
afterwards; pip's cache is ``build/compat/pip-cache``, never the user's home.
A lock file per environment makes concurrent test processes wait for one
creation instead of racing; a marker written last says the environment is whole,
so an interrupted creation is started over.

Run as a script to make them ahead of the tests: ``python -m tests.helpers.compat_venvs``.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMPAT_DIR = ROOT / "build" / "compat"
#: The older releases the matrix runs against.
VERSIONS = ("0.8.3", "0.9.2", "0.10.2", "0.11.2", "0.12.0.1")
_READY = "jaxport-compat-ready"


def venv_python(version: str) -> Path:
    """The Python of the environment with ``jax==version``, made first if it is missing.

    Raises:
        RuntimeError: the environment could not be made (pip's output is in the message).
    """
    directory = COMPAT_DIR / f"jax-{version}"
    python = directory / "bin" / "python"
    if (directory / _READY).exists():
        return python
    COMPAT_DIR.mkdir(parents=True, exist_ok=True)
    with open(COMPAT_DIR / f"jax-{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not (directory / _READY).exists():
            _create(directory, version)
    return python


def _create(directory: Path, version: str) -> None:
    shutil.rmtree(directory, ignore_errors=True)
    env = {**os.environ, "PIP_CACHE_DIR": str(COMPAT_DIR / "pip-cache"),
           "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}
    env.pop("PYTHONPATH", None)
    steps = [
        [sys.executable, "-m", "venv", str(directory)],
        [str(directory / "bin" / "python"), "-m", "pip", "install", "--quiet",
         f"jax=={version}", f"jaxlib=={version}", "flatbuffers"],
    ]
    for step in steps:
        done = subprocess.run(step, env=env, capture_output=True, text=True, timeout=1800)
        if done.returncode != 0:
            raise RuntimeError(f"Making the JAX {version} environment failed at {step[2:4]}:\n"
                               f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
    (directory / _READY).write_text(f"jax {version}\n")


if __name__ == "__main__":
    for v in VERSIONS:
        start = time.perf_counter()
        print(v, venv_python(v), f"{time.perf_counter() - start:.1f} s", flush=True)
