"""The child's side of an isolated process: its limits and the loop that serves its parent.

A child module's ``main`` calls :func:`serve` with its handler and
``sys.argv`` (``MODULE ADDRESS_SPACE CPU_SECONDS``, as
:class:`~.parent.Child` starts it). :func:`serve` first limits the process:
no core dumps, and ``RLIMIT_AS`` (the address space, a hard cap; 0: none).
It then gives the protocol its own copy of standard output, sending whatever
else writes to file descriptor 1 (a library's print, a C++ diagnostic) to
standard error, and hands each message read from standard input to the
handler, until standard input closes. The handler calls
:meth:`Request.limit` once it has imported what it needs, which lets the
request use ``CPU_SECONDS`` of CPU time plus one per MiB of its payload
(``RLIMIT_CPU``: beyond it the process dies of ``SIGXCPU``) and, if asked,
an address space of what is in use plus ``memory`` bytes (a soft limit under
the hard cap); it answers with :meth:`Request.say`. Stdlib only.
"""

from __future__ import annotations

import contextlib
import os
import resource
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any, Final

from .messages import read_message, write_message

#: The largest payload a request may carry (the address space limits it first).
MAX_REQUEST: Final = 1 << 34


@dataclass(frozen=True, slots=True)
class Request:
    """One message from the parent, and the way to answer it.

    Attributes:
        header: the message's JSON object.
        payload: its bytes.
        cpu_seconds: the CPU time a request may use (its payload adds one per MiB).
        out: the protocol's stream (use :meth:`say`).
    """

    header: dict[str, Any]
    payload: bytes
    cpu_seconds: int
    out: IO[bytes]

    def limit(self, memory: int | None = None) -> None:
        """Limits the process for this request: its CPU time and, given ``memory``, its address
        space to what is in use plus ``memory`` bytes (under the hard cap)."""
        used = resource.getrusage(resource.RUSAGE_SELF)
        seconds = int(used.ru_utime + used.ru_stime) + 1 + self.cpu_seconds + (len(self.payload) >> 20)
        resource.setrlimit(resource.RLIMIT_CPU, (seconds, resource.RLIM_INFINITY))
        if memory is None:
            return
        hard = resource.getrlimit(resource.RLIMIT_AS)[1]
        with contextlib.suppress(OSError, ValueError, IndexError), open("/proc/self/statm", "rb") as statm:
            soft = int(statm.read().split()[0]) * resource.getpagesize() + memory
            resource.setrlimit(resource.RLIMIT_AS, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))

    def say(self, header: Mapping[str, Any], payload: bytes = b"") -> None:
        """Sends a message to the parent."""
        write_message(self.out, header, payload)


def serve(handle: Callable[[Request], None], argv: Sequence[str]) -> int:
    """Limits this process, then hands every request to ``handle`` until standard input closes.

    Returns:
        The process's exit status: 0 when standard input closed between
        requests, 1 when it closed inside one or sent a malformed one.
    """
    address_space, cpu_seconds = int(argv[1]), int(argv[2])
    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if address_space > 0:
            resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    except (ValueError, OSError):  # a platform without these limits: the parent's timeout remains
        pass
    stdin, out = sys.stdin.buffer, os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    while True:
        try:
            message = read_message(stdin, MAX_REQUEST)
        except (ValueError, EOFError):
            return 1
        if message is None:
            return 0
        handle(Request(message[0], message[1], cpu_seconds, out))

