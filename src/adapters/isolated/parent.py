"""The parent's side of an isolated process: start it, speak to it under a deadline, report its death.

:class:`Child` starts ``python -m MODULE ADDRESS_SPACE CPU_SECONDS`` (the
child's side: :mod:`.child`) with pipes for the messages of :mod:`.messages`.
While :meth:`Child.watch` is open, a timer kills the child at the deadline.
Whatever stops the child from answering (a signal, a limit it ran into, the
deadline, a malformed or oversized answer, an early exit) raises
:class:`ChildDied`, an :class:`~jaxport.domain.errors.ArtifactError` that says
how in words (``it was killed by SIGSEGV``, ``it did not answer in time``),
once the child has been killed and reaped; the caller words the refusal.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from typing import IO, Any, Final

from jaxport.domain.errors import ArtifactError
from .messages import Message, read_message, write_message

#: How much of the child's standard error is read for its last words, and how many words are kept.
_TAIL_BYTES: Final = 1 << 20
_LAST_WORDS: Final = 40


class ChildDied(ArtifactError, presents_as=ArtifactError):
    """An isolated child stopped before it answered (it has been killed and reaped).

    Attributes:
        how: what happened, in words (``it was killed by SIGSEGV``).
        timed_out: whether it was killed at its deadline.
        last_words: the end of its standard error (when the child keeps it), else "".
    """

    def __init__(self, how: str, *, timed_out: bool = False, last_words: str = "") -> None:
        super().__init__(f"the isolated process stopped ({how})")
        self.how, self.timed_out, self.last_words = how, timed_out, last_words


def env_limit(name: str, default: float) -> float:
    """The limit that the environment variable ``name`` sets (a positive number), else ``default``."""
    try:
        return float(os.environ.get(name, "")) or default
    except ValueError:
        return default


class Child:
    """A running isolated child.

    Args:
        module: the child's module, run as ``python -m module``.
        address_space: its ``RLIMIT_AS`` in bytes (0: none).
        cpu_seconds: the CPU time each request may use (plus one per MiB of its payload).
        last_words: whether to keep its standard error for :attr:`ChildDied.last_words`
            (else it is discarded).
    """

    def __init__(self, module: str, *, address_space: int, cpu_seconds: int, last_words: bool = False) -> None:
        self._errors: IO[bytes] | None = None
        if last_words:
            self._errors = tempfile.TemporaryFile()
        self._process = subprocess.Popen(
            [sys.executable, "-m", module, str(address_space), str(cpu_seconds)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self._errors if self._errors is not None else subprocess.DEVNULL)
        self._timed_out = False

    @property
    def pid(self) -> int | None:
        """The child's process id while it runs, else None."""
        return self._process.pid if self._process.poll() is None else None

    @contextlib.contextmanager
    def watch(self, deadline: float) -> Iterator[None]:
        """Kills the child if it is still inside this block at ``deadline`` (``time.monotonic()``)."""
        self._timed_out = False
        timer = threading.Timer(max(0.0, deadline - time.monotonic()), self._expire)
        timer.start()
        try:
            yield
        finally:
            timer.cancel()

    def send(self, header: Mapping[str, Any], payload: bytes = b"", *, last: bool = False) -> None:
        """Sends a message (``last``: then closes the child's input, so that it ends after answering).

        Raises:
            ChildDied: the child stopped.
        """
        stdin = self._process.stdin
        assert stdin is not None
        try:
            write_message(stdin, header, payload)
            if last:
                stdin.close()
        except OSError:
            raise self._died(None) from None

    def receive(self, limit: int) -> Message:
        """The child's next message, whose payload may have at most ``limit`` bytes.

        Raises:
            ChildDied: the child stopped, or sent what is not a message.
        """
        stdout = self._process.stdout
        assert stdout is not None
        try:
            message = read_message(stdout, limit)
        except (ValueError, RecursionError) as exc:
            raise self._died(f"it answered with {exc}") from None
        except (EOFError, OSError):
            message = None
        if message is None:
            raise self._died(None)
        return message

    def finish(self, deadline: float) -> None:
        """Closes the child's input and waits for it to exit.

        Raises:
            ChildDied: it did not exit by ``deadline``, or not with status 0.
        """
        self._release()
        try:
            code: int | None = self._process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self._timed_out, code = True, None
        if code != 0:
            raise self._died(None)
        self._close_errors()

    def close(self) -> None:
        """Ends the child (it exits when its input closes; killed if it has not within 5 s)."""
        with contextlib.suppress(ChildDied):
            self.finish(time.monotonic() + 5)

    def _expire(self) -> None:
        self._timed_out = True
        with contextlib.suppress(OSError):
            self._process.kill()

    def _died(self, bad: str | None) -> ChildDied:
        """Kills and reaps the child (given time to exit first, unless it answered ``bad``ly)."""
        process = self._process
        if bad is None and not self._timed_out:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=5)
        if process.poll() is None:
            process.kill()
        code = process.wait()
        self._release()
        if self._timed_out:
            how = "it did not answer in time"
        elif bad is not None:
            how = bad
        elif code < 0:
            name = signal.Signals(-code).name if -code in set(signal.Signals) else f"signal {-code}"
            how = f"it was killed by {name}"
        else:
            how = f"it exited with status {code}" if code else "it gave no answer"
        return ChildDied(how, timed_out=self._timed_out, last_words=self._close_errors())

    def _release(self) -> None:
        """Closes the pipes to the child (its answers have been read)."""
        for pipe in (self._process.stdin, self._process.stdout):
            with contextlib.suppress(OSError):
                if pipe is not None:
                    pipe.close()

    def _close_errors(self) -> str:
        """The last words of the child's standard error (when kept), closing its file."""
        errors, self._errors = self._errors, None
        if errors is None:
            return ""
        with errors:
            errors.seek(max(0, errors.seek(0, os.SEEK_END) - _TAIL_BYTES))
            return " ".join(errors.read().decode("utf-8", "replace").split()[-_LAST_WORDS:])
