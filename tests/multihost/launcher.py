"""Run one Python script in several local processes on JAX's distributed runtime.

The parent side, `launch`, starts N copies of a script with the environment of
a multi-controller JAX job on this machine: a coordinator on 127.0.0.1 at a
free port, one process id each, CPU collectives through gloo. It waits for all
of them (killing the rest when one fails or the time runs out) and returns
their outputs, or raises `MultiProcessError` with every process's exit status
and the tail of its output.

The child side, `initialize`, is the first thing such a script calls: it reads
that environment, sets the number of CPU devices and the collectives, and
calls `jax.distributed.initialize`. Scripts import it as
`from tests.multihost.launcher import initialize` (the launcher puts the
repository root on the children's PYTHONPATH).

`local_ports_unavailable()` says why the machine cannot run such a job (no
local TCP port can be opened), or returns None.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

_ENV_COORDINATOR = "JAXPORT_MH_COORDINATOR"
_ENV_NUM_PROCESSES = "JAXPORT_MH_NUM_PROCESSES"
_ENV_PROCESS_ID = "JAXPORT_MH_PROCESS_ID"
_ENV_DEVICES = "JAXPORT_MH_CPU_DEVICES"
_REPO_ROOT = Path(__file__).resolve().parents[2]
_TAIL = 4000


@dataclass(frozen=True, slots=True)
class ProcessResult:
    """What one process of a job printed, and how it ended."""

    process_id: int
    returncode: int  # negative: killed by that signal (after a failure or the timeout)
    stdout: str
    stderr: str


class MultiProcessError(RuntimeError):
    """A process of the job failed, or the job ran past its timeout."""

    def __init__(self, reason: str, results: Sequence[ProcessResult]) -> None:
        parts = [reason]
        for r in results:
            status = (f"killed by signal {-r.returncode}" if r.returncode < 0
                      else f"exit status {r.returncode}")
            parts.append(f"--- process {r.process_id}: {status}")
            parts.append(f"stdout (tail):\n{r.stdout[-_TAIL:]}")
            parts.append(f"stderr (tail):\n{r.stderr[-_TAIL:]}")
        super().__init__("\n".join(parts))
        self.results = tuple(results)


def local_ports_unavailable() -> str | None:
    """Why no local job can run here (a TCP port on 127.0.0.1 cannot be opened), or None."""
    try:
        free_port()
    except OSError as exc:
        return f"cannot open a local TCP port on 127.0.0.1: {exc}"
    return None


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def launch(
    script: str,
    num_processes: int = 2,
    *,
    cpu_devices_per_process: int = 4,
    timeout_s: float = 180.0,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> list[ProcessResult]:
    """Run the Python source `script` in `num_processes` processes of one job.

    Args:
        script: Python source; it should call `initialize()` before using JAX.
        num_processes: how many processes (one per simulated host).
        cpu_devices_per_process: CPU devices each process sees.
        timeout_s: wall-clock limit for the whole job.
        args: command-line arguments given to every process (sys.argv[1:]).
        env: extra environment variables for every process.

    Returns:
        One `ProcessResult` per process, in process-id order, all exited with 0.

    Raises:
        MultiProcessError: a process exited with non-zero status, or the job ran
            past `timeout_s` (every process is then killed).
    """
    with tempfile.TemporaryDirectory(prefix="jaxport-multihost-") as tmp:
        path = Path(tmp) / "job.py"
        path.write_text(script, encoding="utf-8")
        coordinator = f"127.0.0.1:{free_port()}"
        procs, outs = [], []
        for pid in range(num_processes):
            child_env = _child_env(env, coordinator, num_processes, pid, cpu_devices_per_process)
            out = open(Path(tmp) / f"out{pid}", "w+", encoding="utf-8")
            err = open(Path(tmp) / f"err{pid}", "w+", encoding="utf-8")
            outs.append((out, err))
            procs.append(subprocess.Popen(
                [sys.executable, str(path), *args], stdout=out, stderr=err,
                env=child_env, cwd=tmp))
        reason = _wait_all(procs, timeout_s)
        results = []
        for pid, (proc, (out, err)) in enumerate(zip(procs, outs)):
            out.seek(0)
            err.seek(0)
            results.append(ProcessResult(pid, proc.wait(), out.read(), err.read()))
            out.close()
            err.close()
    if reason is not None:
        raise MultiProcessError(reason, results)
    return results


def _child_env(extra: Mapping[str, str] | None, coordinator: str, n: int, pid: int,
               devices: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra or {})
    env[_ENV_COORDINATOR] = coordinator
    env[_ENV_NUM_PROCESSES] = str(n)
    env[_ENV_PROCESS_ID] = str(pid)
    env[_ENV_DEVICES] = str(devices)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(_REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    env.pop("XLA_FLAGS", None)  # a forced host device count would fight jax_num_cpu_devices
    return env


def _wait_all(procs: Sequence[subprocess.Popen[bytes]], timeout_s: float) -> str | None:
    """Wait for every process; on a failure or the timeout kill the rest. Returns why it failed."""
    deadline = time.monotonic() + timeout_s
    reason: str | None = None
    while any(p.poll() is None for p in procs):
        failed = [i for i, p in enumerate(procs) if p.returncode not in (None, 0)]
        if failed and reason is None:
            reason = f"process {failed[0]} exited with status {procs[failed[0]].returncode}"
            deadline = min(deadline, time.monotonic() + 10.0)  # let the others report, briefly
        if time.monotonic() > deadline:
            reason = reason or f"the job ran past its timeout of {timeout_s:.0f} s"
            for p in procs:
                if p.poll() is None:
                    p.kill()
            for p in procs:
                p.wait()
            return reason
        time.sleep(0.05)
    failed = [i for i, p in enumerate(procs) if p.returncode != 0]
    if failed and reason is None:
        reason = f"process {failed[0]} exited with status {procs[failed[0]].returncode}"
    return reason


def initialize() -> int:
    """Child side: join the job the launcher started; returns this process's id.

    Sets `jax_num_cpu_devices` and gloo CPU collectives before calling
    `jax.distributed.initialize` with the launcher's coordinator.
    """
    import jax

    pid = int(os.environ[_ENV_PROCESS_ID])
    jax.config.update("jax_num_cpu_devices", int(os.environ[_ENV_DEVICES]))
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        coordinator_address=os.environ[_ENV_COORDINATOR],
        num_processes=int(os.environ[_ENV_NUM_PROCESSES]),
        process_id=pid,
        initialization_timeout=60)
    return pid
