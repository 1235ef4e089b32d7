"""Parsing untrusted modules in a separate, limited, long-lived process.

:class:`ModuleWorker` starts :mod:`.worker_main` on first use and keeps it
for later requests; when it dies (a crash of the MLIR reader, a memory or CPU
limit) or does not answer in time (it is then killed), the request fails
with :class:`ArtifactError` and the next request starts a new process. The
calling process never parses a module itself here. One request at a time per
worker (a lock), so threads may share it.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from collections.abc import Mapping
from typing import IO, TYPE_CHECKING, Any, Final

from jaxport.domain.artifact.record import ArtifactRecord
from jaxport.domain.errors import ArtifactError
from jaxport.domain.artifact.verification import ModuleFacts

if TYPE_CHECKING:
    from jaxport.domain.converted.static_shapes import StaticShapes

# What only a verification or a converter's forms need is imported where used (the verifying
# process's module, the rewrites, the static shapes): a load whose verdicts are remembered never
# does (1.7 ms of a fresh first answer under -X importtime; tests/e2e/test_load_path_imports.py).
_WORKER_MAIN: Final = f"{__package__}.worker_main"

#: Default limits of the verifying process (each request also gets one CPU
#: second and three wall seconds per MiB of module). The environment variables
#: ``JAXPORT_VERIFY_CPU_SECONDS`` and ``JAXPORT_VERIFY_TIMEOUT`` override the
#: last two for the application's worker (:func:`jaxport.application.wiring.module_worker`).
DEFAULT_ADDRESS_SPACE: Final = 8 << 30
DEFAULT_CPU_SECONDS: Final = 20
DEFAULT_TIMEOUT_SECONDS: Final = 60.0
#: How long the first request may also wait for the process to import jaxlib's MLIR bindings.
STARTUP_SECONDS: Final = 120.0


@dataclass(frozen=True, slots=True)
class Checked:
    """A module as the verifying process saw it.

    Attributes:
        facts: ``main``'s types and the custom-call targets.
        reserialized: the module as the serializer wrote it after parsing (or the
            form of it that the request asked for).
    """

    facts: ModuleFacts
    reserialized: bytes


class ModuleWorker:
    """A verifying process, restarted when it dies.

    Args:
        address_space: ``RLIMIT_AS`` of the process, in bytes.
        cpu_seconds: CPU time each request may use.
        timeout: wall-clock seconds each request may take.
    """

    def __init__(self, *, address_space: int = DEFAULT_ADDRESS_SPACE,
                 cpu_seconds: int = DEFAULT_CPU_SECONDS,
                 timeout: float = DEFAULT_TIMEOUT_SECONDS) -> None:
        self._limits = (address_space, cpu_seconds)
        self._timeout = timeout
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._fresh = False
        atexit.register(self.close)

    @staticmethod
    def parser_version() -> str:
        """The version of the parser a verdict depends on (jaxlib's StableHLO reader)."""
        # jaxlib's own version string (importlib.metadata's, which it is built from, would cost a
        # fresh process's first load tens of milliseconds of reading installed packages' metadata).
        from jaxlib.version import __version__ as jaxlib_version

        from .module import StableHloSerializer

        return f"jaxlib {jaxlib_version}, StableHLO {StableHloSerializer.newest_readable_version()}"

    @property
    def pid(self) -> int | None:
        """The process id of the running verifying process, if any."""
        process = self._process
        return None if process is None or process.poll() is not None else process.pid

    def check(self, module: bytes, *, sdy: bool, form: Mapping[str, Any] | None = None) -> Checked:
        """Parses, verifies and re-serializes ``module`` in the verifying process.

        Args:
            module: the module's bytes (a StableHLO portable artifact).
            sdy: whether to re-serialize with Shardy's ops kept.
            form: at most one of ``{"standard": ...}``, ``{"version": ...}``,
                ``{"specialize": ...}`` (:mod:`.rewrite`): ``reserialized`` is then
                that form of the module, made by the verifying process once it
                has verified the module (or the plain re-serialization, when the
                module has that form already).

        Raises:
            ArtifactError: the module does not parse or verify, or the process
                died or timed out on it.
            ValueError: JAX's refinement refused the shapes of a ``specialize`` form.
        """
        with self._lock:
            process = self._ensure()
            deadline = (time.monotonic() + self._timeout + 3 * (len(module) >> 20)
                        + (STARTUP_SECONDS if self._fresh else 0))
            self._fresh = False
            assert process.stdin is not None and process.stdout is not None
            from . import worker_main

            try:
                worker_main.write_frames(process.stdin, json.dumps({"sdy": sdy, **(form or {})}).encode(), module)
                header = self._read(process.stdout, deadline, 64 << 20)
                again = self._read(process.stdout, deadline, 4 * len(module) + (1 << 20))
            except (OSError, _Died) as exc:
                self._kill()
                raise ArtifactError(self._death_message(process, exc)) from None
        value = json.loads(header) if header.startswith((b'{"error"', b'{"refused"')) else None
        if isinstance(value, dict) and "error" in value:
            raise ArtifactError(f"The module does not parse: {value['error']}")
        if isinstance(value, dict) and "refused" in value:
            raise ValueError(value["refused"])
        return Checked(ModuleFacts.from_json(header), again)

    def close(self) -> None:
        """Stops the verifying process (it exits when its input closes)."""
        with self._lock:
            process, self._process = self._process, None
            if process is None:
                return
            try:
                if process.stdin is not None:
                    process.stdin.close()
                process.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                process.kill()
                process.wait()

    def _ensure(self) -> subprocess.Popen[bytes]:
        if self._process is not None and self._process.poll() is None:
            return self._process
        self._process = subprocess.Popen(
            [sys.executable, "-m", _WORKER_MAIN,
             str(self._limits[0]), str(self._limits[1])],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self._fresh = True
        return self._process

    def _read(self, stream: IO[bytes], deadline: float, limit: int) -> bytes:
        head = self._read_exactly(stream, 4, deadline)
        size = int.from_bytes(head, "little")
        if size > limit:
            raise _Died(f"it sent a frame of {size} bytes, over the limit of {limit}")
        return self._read_exactly(stream, size, deadline)

    @staticmethod
    def _read_exactly(stream: IO[bytes], size: int, deadline: float) -> bytes:
        chunks: list[bytes] = []
        left = size
        fd = stream.fileno()
        while left:
            wait = deadline - time.monotonic()
            if wait <= 0:
                raise _Died("it did not answer in time")
            ready, _, _ = select.select([fd], [], [], wait)
            if not ready:
                continue
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                raise _Died("it exited")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def _kill(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.kill()
        process.wait()

    @staticmethod
    def _death_message(process: subprocess.Popen[bytes], exc: BaseException) -> str:
        code = process.returncode
        how = str(exc)
        if "in time" in how:
            pass
        elif code is not None and code < 0:
            try:
                how = f"it was killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"it was killed by signal {-code}"
        elif code is not None and code > 0:
            how = f"it exited with status {code}"
        return (f"The module could not be verified: the verifying process stopped while "
                f"parsing it ({how}). The artifact is refused; this process is unaffected.")


@dataclass(frozen=True, slots=True)
class ChildModuleForms:
    """The verifying process's forms of a module, for a converter (a
    :class:`~jaxport.domain.targets.ports.ModuleForms`)."""

    worker: ModuleWorker

    def for_version(self, module: bytes, version: str) -> bytes:
        """``module`` written for the older StableHLO ``version`` (see the port)."""
        from .rewrite import MIXED_SERIALIZATION, written_after

        if not written_after(module, version):
            return module
        return self.worker.check(module, sdy=MIXED_SERIALIZATION, form={"version": version}).reserialized

    def written_for(self, module: bytes, version: str) -> bytes:
        """``module`` written for the older StableHLO ``version`` (itself when it is not newer),
        for a consumer that reads that version.

        Raises:
            ValueError: ``version`` lacks an operation the module uses (StableHLO's message names it).
            ArtifactError: the module does not parse or verify.
        """
        from .rewrite import MIXED_SERIALIZATION, written_after

        if not written_after(module, version):
            return module
        form = {"version": version, "strict": True}
        return self.worker.check(module, sdy=MIXED_SERIALIZATION, form=form).reserialized

    def specialized(self, record: ArtifactRecord, shapes: StaticShapes, platform_index: int | None) -> bytes:
        """``record``'s module for ``shapes``, refined (see the port)."""
        from .rewrite import MIXED_SERIALIZATION, specialize_request

        form = {"specialize": specialize_request(record, shapes, platform_index)}
        return self.worker.check(record.mlir_module_serialized, sdy=MIXED_SERIALIZATION, form=form).reserialized


class _Died(Exception):
    """The verifying process stopped answering."""


_shared: list[ModuleWorker] = []
_shared_lock = threading.Lock()


def shared_worker() -> ModuleWorker:
    """The process's verifying process (it starts on its first request), with the limits that
    ``JAXPORT_VERIFY_CPU_SECONDS`` and ``JAXPORT_VERIFY_TIMEOUT`` set: one for every caller."""
    with _shared_lock:
        if not _shared:
            _shared.append(_configured_worker())
        return _shared[0]


def _configured_worker() -> ModuleWorker:
    return ModuleWorker(
        cpu_seconds=int(os.environ.get("JAXPORT_VERIFY_CPU_SECONDS", DEFAULT_CPU_SECONDS)),
        timeout=float(os.environ.get("JAXPORT_VERIFY_TIMEOUT", DEFAULT_TIMEOUT_SECONDS)))
