"""Runs one Python script in several local processes, as the hosts of JAX's distributed runtime.

Each process gets, in its environment, ``JAXPORT_PROCESS_ID``,
``JAXPORT_NUM_PROCESSES`` and ``JAXPORT_COORDINATOR`` (``127.0.0.1:PORT``, a
free port); the script starts the runtime itself, typically with
:func:`initialize_from_env`::

    from tests.multihost.launcher import initialize_from_env
    initialize_from_env(num_cpu_devices=4)

The repository root is on the children's ``PYTHONPATH``, so that import works.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class MultiProcessError(AssertionError):
    """A process failed or did not finish in time; the message holds every process's output."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def initialize_from_env(num_cpu_devices: int = 4) -> None:
    """In a child of :func:`run_processes`: N CPU devices, gloo collectives, then the runtime."""
    import jax

    jax.config.update("jax_num_cpu_devices", num_cpu_devices)
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=os.environ["JAXPORT_COORDINATOR"],
                               num_processes=int(os.environ["JAXPORT_NUM_PROCESSES"]),
                               process_id=int(os.environ["JAXPORT_PROCESS_ID"]))


def run_processes(script: str | os.PathLike[str], num_processes: int = 2, *, args: Sequence[str] = (),
                  timeout: float = 120.0, env: Mapping[str, str] | None = None) -> list[str]:
    """Runs ``python script *args`` in ``num_processes`` processes at once; their stdouts, by process id.

    Args:
        script: the path of a Python file.
        num_processes: how many processes (hosts) to start.
        args: command-line arguments for every process.
        timeout: seconds for all of them together.
        env: variables added to this process's environment.

    Raises:
        MultiProcessError: a process exited with a non-zero status (the
            others are then stopped) or they did not all finish in time.
    """
    port = free_port()
    base = {**os.environ, **(env or {})}
    base["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), base.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory(prefix="jaxport-multihost-") as logs:
        procs = []
        # Output goes to files, not pipes: a chatty process never blocks on a full pipe.
        for i in range(num_processes):
            child_env = {**base, "JAXPORT_PROCESS_ID": str(i), "JAXPORT_NUM_PROCESSES": str(num_processes),
                         "JAXPORT_COORDINATOR": f"127.0.0.1:{port}"}
            with open(Path(logs, f"{i}.out"), "w") as out, open(Path(logs, f"{i}.err"), "w") as err:
                procs.append(subprocess.Popen([sys.executable, os.fspath(script), *args], env=child_env,
                                              stdout=out, stderr=err))
        failure = _wait(procs, time.monotonic() + timeout)
        for p in procs:
            p.wait()
        outputs = [(Path(logs, f"{i}.out").read_text(), Path(logs, f"{i}.err").read_text())
                   for i in range(num_processes)]
    if failure is not None:
        report = "\n".join(f"--- process {i} (exit {p.returncode})\nstdout:\n{out}\nstderr:\n{err}"
                           for i, (p, (out, err)) in enumerate(zip(procs, outputs)))
        raise MultiProcessError(f"{failure}\n{report}")
    return [out for out, _ in outputs]


def _wait(procs: list[subprocess.Popen[bytes]], deadline: float) -> str | None:
    """Waits for all; on the first failure or at the deadline, stops the rest and says why."""
    while True:
        codes = [p.poll() for p in procs]
        failed = [i for i, c in enumerate(codes) if c not in (None, 0)]
        reason = None
        if failed:
            reason = f"process {failed[0]} exited with status {codes[failed[0]]}"
        elif all(c == 0 for c in codes):
            return None
        elif time.monotonic() > deadline:
            reason = "the processes did not finish in time"
        if reason is not None:
            for p in procs:
                if p.poll() is None:
                    p.kill()
            return reason
        time.sleep(0.05)
