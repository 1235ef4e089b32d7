"""Parsing untrusted modules in a separate, limited, long-lived process.

:class:`ChildModuleWorker` (the :class:`~jaxport.domain.ports.ModuleWorker`
port) starts :mod:`.worker_main` on first use and keeps it
for later requests; when it dies (a crash of the MLIR reader, a memory or CPU
limit) or does not answer in time (it is then killed), the request fails
with :class:`ArtifactError` and the next request starts a new process. The
calling process never parses a module itself here. One request at a time per
worker (a lock), so threads may share it.
"""

from __future__ import annotations

import atexit
import json
import threading
import time
from collections.abc import Mapping
from typing import Any, Final

from jaxport.adapters.isolated.parent import Child, ChildDied, env_limit
from jaxport.domain.errors import ArtifactError
from jaxport.domain.artifact.kernels import kernels_from_json
from jaxport.domain.artifact.op_sharding import meshes_from_json
from jaxport.domain.artifact.verification import ModuleFacts
from jaxport.domain.ports import CheckedModule

# What only a verification or a converter's forms need is not imported here (the verifying
# process's module, the rewrites, :class:`~.rewrite.ChildModuleForms`): a load whose verdicts are
# remembered never does (1.7 ms of a fresh first answer under -X importtime;
# tests/e2e/test_load_path_imports.py).
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


class ChildModuleWorker:
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
        self._child: Child | None = None
        atexit.register(self.close)

    @property
    def pid(self) -> int | None:
        """The process id of the running verifying process, if any."""
        return None if self._child is None else self._child.pid

    def check(self, module: bytes, *, sdy: bool, form: Mapping[str, Any] | None = None) -> CheckedModule:
        """Parses, verifies and re-serializes ``module`` in the verifying process.

        Args:
            module: the module's bytes (a StableHLO portable artifact).
            sdy: whether to re-serialize with Shardy's ops kept.
            form: at most one of ``{"standard": ...}``, ``{"version": ...}``,
                ``{"specialize": ...}`` (:mod:`.rewrite`), ``{"kernels": ...}``
                (:mod:`.kernels`), ``{"meshes": True}`` (its Shardy meshes besides): ``reserialized`` is then
                that form of the module, made by the verifying process once it
                has verified the module (or the plain re-serialization, when the
                module has that form already).

        Raises:
            ArtifactError: the module does not parse or verify, or the process
                died or timed out on it.
            ValueError: JAX's refinement refused the shapes of a ``specialize`` form, or a
                kernel cannot be read or written for the Mosaic version of a ``kernels`` form.
        """
        with self._lock:
            child = self._child
            fresh = child is None or child.pid is None
            if child is None or fresh:
                child = self._child = Child(_WORKER_MAIN, address_space=self._limits[0],
                                            cpu_seconds=self._limits[1])
            deadline = (time.monotonic() + self._timeout + 3 * (len(module) >> 20)
                        + (STARTUP_SECONDS if fresh else 0))
            try:
                with child.watch(deadline):
                    child.send({"sdy": sdy, **(form or {})}, module)
                    header, again = child.receive(4 * len(module) + (1 << 20))
            except ChildDied as died:
                self._child = None
                raise ArtifactError(f"The module could not be verified: the verifying process stopped while "
                                    f"parsing it ({died.how}). The artifact is refused; this process is "
                                    "unaffected.") from None
        if "error" in header:
            raise ArtifactError(f"The module does not parse: {header['error']}")
        if "refused" in header:
            raise ValueError(header["refused"])
        return CheckedModule(ModuleFacts.from_json(json.dumps(header).encode()), again,
                             kernels_from_json(header.get("kernels")), meshes_from_json(header.get("meshes")))

    def close(self) -> None:
        """Stops the verifying process (it exits when its input closes)."""
        with self._lock:
            child, self._child = self._child, None
            if child is not None:
                child.close()


_shared: list[ChildModuleWorker] = []
_shared_lock = threading.Lock()


def shared_worker() -> ChildModuleWorker:
    """The process's verifying process (it starts on its first request), with the limits that
    ``JAXPORT_VERIFY_CPU_SECONDS`` and ``JAXPORT_VERIFY_TIMEOUT`` set: one for every caller."""
    with _shared_lock:
        if not _shared:
            _shared.append(_configured_worker())
        return _shared[0]


def _configured_worker() -> ChildModuleWorker:
    return ChildModuleWorker(cpu_seconds=int(env_limit("JAXPORT_VERIFY_CPU_SECONDS", DEFAULT_CPU_SECONDS)),
                             timeout=env_limit("JAXPORT_VERIFY_TIMEOUT", DEFAULT_TIMEOUT_SECONDS))
