"""The runtimes' own log noise, silenced unless asked for: :func:`native_info_silenced`, :func:`quiet_tensorflow`.

LiteRT's ``CompiledModel`` writes a dozen ``INFO:`` lines to the process's
stderr from C++ at each load (the accelerators it registers, ``Could not load
shared library ... libopenvino.so``), and has no variable that lowers its
level; TensorFlow prints its oneDNN notice unless ``TF_CPP_MIN_LOG_LEVEL`` says
otherwise. ``JAXPORT_LOG`` (any value but ``0``) shows them all, as does the
runtime's own variable where it has one (``TF_CPP_MIN_LOG_LEVEL``).
"""

from __future__ import annotations

import contextlib
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
def native_info_silenced(prefix: str = "INFO: ") -> Iterator[None]:
    """Within: what native code writes to file descriptor 2 is held, then its lines that do not start with
    ``prefix`` are written back (warnings and errors stay); everything passes where :func:`runtime_logs_shown`."""
    if runtime_logs_shown():
        yield
        return
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
                            if not line.startswith(prefix.encode()))
            if kept:
                os.write(2, kept)


def quiet_tensorflow() -> None:
    """Before TensorFlow is imported: its C++ INFO lines off (``TF_CPP_MIN_LOG_LEVEL=1``), unless that variable
    is set or :func:`runtime_logs_shown`."""
    if not runtime_logs_shown():
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
