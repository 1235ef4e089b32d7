"""The runtimes' own log noise, silenced unless asked for: :func:`native_info_silenced`, :func:`quiet_tensorflow`.

LiteRT's ``CompiledModel`` writes a dozen ``INFO:`` lines to the process's
stderr from C++ at each load (the accelerators it registers, ``Could not load
shared library ... libopenvino.so``), and has no variable that lowers its
level; TensorFlow prints its oneDNN notice unless ``TF_CPP_MIN_LOG_LEVEL`` says
otherwise. ``JAXPORT_LOG`` (any value but ``0``) shows them all, as does the
runtime's own variable where it has one (``TF_CPP_MIN_LOG_LEVEL``).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import sys
import tempfile
from collections.abc import Iterator

#: The variable that shows the runtimes' own logs.
LOG_VARIABLE = "JAXPORT_LOG"


def runtime_logs_shown() -> bool:
    """Whether ``JAXPORT_LOG`` asks for the runtimes' own logs."""
    return os.environ.get(LOG_VARIABLE, "0") not in ("", "0")


@contextlib.contextmanager
def native_info_silenced(noise: tuple[bytes, ...] = (b"INFO: ",)) -> Iterator[None]:
    """Within: what native code writes to file descriptor 2 is held, then its lines that hold none of
    ``noise`` are written back (other warnings and errors stay); everything passes where
    :func:`runtime_logs_shown`.

    What the runtime's objects write when they are destroyed at the process's exit (LiteRT's
    ``DestroyAccelerator`` lines), after Python has said all it had to, is dropped too."""
    if runtime_logs_shown():
        yield
        return
    _quiet_at_exit()
    sys.stderr.flush()
    with tempfile.TemporaryFile() as held:
        saved = os.dup(2)
        os.dup2(held.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            kept = b"".join(line for line in held.read().splitlines(keepends=True)
                            if not any(mark in line for mark in noise))
            if kept:
                os.write(2, kept)


def quiet_tensorflow() -> None:
    """Before TensorFlow is imported: its C++ INFO lines off (``TF_CPP_MIN_LOG_LEVEL=1``), unless that variable
    is set or :func:`runtime_logs_shown`."""
    if not runtime_logs_shown():
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")


@functools.cache
def _quiet_at_exit() -> None:
    """At exit, after Python's own handlers (registered first, run last): file descriptor 2 to the null device,
    for the native destructors that run after the interpreter is done."""
    def quiet() -> None:
        sys.stderr.flush()
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 2)
        os.close(null)

    atexit.register(quiet)
