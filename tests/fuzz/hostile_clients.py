"""Hostile clients of ``jaxport serve``, and hostile directories served by it.

:func:`client_campaign` starts one server of a generative bundle and sends it ``count`` hostile requests,
seeded: malformed JSON and bodies cut short, deeply nested and oversized bodies, NaN and infinite numbers,
wrong types and content types, ids out of range, streams read one byte at a time or dropped in the middle,
floods beyond the queue. After each it asks ``/v2/health/ready`` and makes a good request; it counts the
hostile request's outcome (its HTTP status, ``closed`` where the client went away) and every failure of
those two, every call past :data:`BOUND_S`, a death of the server, and compares the server's resident memory
after the campaign with its level after a warm-up (within 10%).

:func:`serve_hostile` serves hostile directories: each must stop before it reports ready (``refused``) or
be ready and answer (``ready``); ``hung`` and ``died:<status>`` are bugs.
"""

from __future__ import annotations

import collections
import http.client
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.helpers.serving import HOST, free_port

#: The most seconds a hostile call, a health check or a good request may take.
BOUND_S = 30.0
GOOD = {"model": "gpt", "prompt": [1, 2, 3], "max_tokens": 3, "temperature": 0}


@dataclass
class _Server:
    path: Path
    log: Path
    args: tuple[str, ...] = ()
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    def launch(self) -> _Server:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "jaxport", "serve", str(self.path), "--host", HOST, "--http-port",
                 str(self.port), "--grpc-port", str(free_port()), "--model-name", "gpt", *self.args],
                stdout=log, stderr=subprocess.STDOUT, env=env)
        return self

    def ready(self) -> bool:
        return _request(self.port, "GET", "/v2/health/ready")[0] == 200

    def wait(self, seconds: float = 180.0) -> str:
        """``ready``, ``refused`` (it stopped with a typed error, status 2, before it was ready), ``died:<status>`` or ``hung``."""
        assert self.process is not None
        for _ in range(int(seconds * 10)):
            code = self.process.poll()
            if code is not None:
                return "refused" if code == 2 else f"died:{code}"  # 2: a typed refusal; 70: a bug
            if self.ready():
                return "ready"
            time.sleep(0.1)
        return "hung"

    def stop(self) -> int:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait(10)

    def rss(self) -> int:
        assert self.process is not None
        with open(f"/proc/{self.process.pid}/status") as status:
            line = next(line for line in status if line.startswith("VmRSS:"))
        return int(line.split()[1]) * 1024


def _request(port: int, method: str, path: str, body: bytes | None = None,
             headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    """The status and body of one request (0 and the error's name where the connection failed)."""
    connection = http.client.HTTPConnection(HOST, port, timeout=BOUND_S)
    try:
        connection.request(method, path, body, headers or {})
        response = connection.getresponse()
        return response.status, response.read()
    except (OSError, http.client.HTTPException) as exc:
        return 0, type(exc).__name__.encode()
    finally:
        connection.close()


def _post(port: int, body: bytes, content_type: str = "application/json",
          route: str = "/openai/v1/completions") -> str:
    return f"status:{_request(port, 'POST', route, body, {'Content-Type': content_type})[0]}"


def _stream_then(port: int, action: str, rng: random.Random) -> str:
    """A streamed completion read one byte at a time (``slow``) or dropped after its first bytes (``drop``)."""
    body = json.dumps(dict(GOOD, max_tokens=12, stream=True)).encode()
    with socket.create_connection((HOST, port), timeout=BOUND_S) as sock:
        sock.sendall(b"POST /openai/v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        got = b""
        for _ in range(rng.randrange(1, 400) if action == "slow" else 1):
            piece = sock.recv(1 if action == "slow" else 64)
            if not piece:
                break
            got += piece
            if action == "slow":
                time.sleep(0.002)
        if action == "drop":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    return "closed"


def _flood(port: int, rng: random.Random) -> str:
    """More concurrent streams than the slots and the queue hold: the statuses they got, joined."""
    statuses: list[int] = []
    lock = threading.Lock()

    def one() -> None:
        status = _request(port, "POST", "/openai/v1/completions", json.dumps(
            dict(GOOD, max_tokens=rng.randrange(1, 30))).encode(), {"Content-Type": "application/json"})[0]
        with lock:
            statuses.append(status)

    threads = [threading.Thread(target=one) for _ in range(24)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(BOUND_S * 2)
    return "flood:" + "/".join(str(s) for s in sorted(set(statuses)))


def _hostile_request(port: int, rng: random.Random) -> str:
    kind = rng.randrange(14)
    good = json.dumps(GOOD)
    if kind == 0:
        return _post(port, good.encode()[: rng.randrange(len(good))])
    if kind == 1:
        return _post(port, bytes(rng.randrange(256) for _ in range(rng.randrange(1, 2000))))
    if kind == 2:
        depth = rng.choice([100, 1000, 100_000])
        return _post(port, ('{"model": "gpt", "prompt": ' + "[" * depth + "]" * depth + "}").encode())
    if kind == 3:
        field_, value = rng.choice([("temperature", "NaN"), ("top_p", "Infinity"), ("max_tokens", "-Infinity"),
                                    ("seed", "1e999"), ("temperature", "1e-999")])
        return _post(port, good.replace('"temperature": 0', f'"{field_}": {value}').encode())
    if kind == 4:
        return _post(port, json.dumps(dict(GOOD, prompt="x" * rng.choice([3000, 2 << 20]))).encode())
    if kind == 5:
        return _post(port, good.encode(), rng.choice(["text/plain", "application/x-www-form-urlencoded",
                                                      "application/json; charset=utf-16", ""]))
    if kind == 6:
        count: Any = rng.choice([-1, 0, 10 ** 30, "8", None, [1], 1.5, True])
        return _post(port, json.dumps(dict(GOOD, max_tokens=count)).encode())
    if kind == 7:
        ids = rng.choice([[2 ** 70], [-1], [99999], list(range(5000)), [], [[1]], ["a"], [1.0]])
        return _post(port, json.dumps(dict(GOOD, prompt=ids)).encode())
    if kind == 8:
        return _stream_then(port, "slow", rng)
    if kind == 9:
        return _stream_then(port, "drop", rng)
    if kind == 10:
        return _flood(port, rng)
    if kind == 11:
        messages = rng.choice([[], [{"role": "user"}], [{"role": "user", "content": 3}],
                               [{"role": "user", "content": "the dog"}] * 5000, [{"role": "x" * 10000, "content": ""}],
                               [{"role": "user", "content": "hi", "extra": 1}]])
        return _post(port, json.dumps({"model": "gpt", "messages": messages, "max_tokens": 2}).encode(),
                     route="/openai/v1/chat/completions")
    if kind == 12:
        return f"status:{_request(port, 'POST', '/openai/v1/completions', good.encode(), {'Content-Type': 'application/json', 'Origin': 'http://evil.example'})[0]}"
    return _post(port, json.dumps(dict(GOOD, stop=rng.choice([["" ], ["x"] * 5000, [2 ** 70], "a" * 100000]))).encode())


@dataclass
class ClientReport:
    """What the client campaign saw."""

    outcomes: collections.Counter[str]
    failures: list[str]
    rss_before: int
    rss_after: int
    died: bool

    @property
    def ok(self) -> bool:
        """No death, no failure after a hostile request, no 500, memory back within 10%."""
        return (not self.died and not self.failures and not any("500" in o for o in self.outcomes)
                and self.rss_after <= self.rss_before * 1.1)

    def __str__(self) -> str:
        return (f"{dict(sorted(self.outcomes.items()))}; failures after a hostile request: {len(self.failures)} "
                f"{self.failures[:3]}; died: {self.died}; resident memory {self.rss_before >> 20} MiB before, "
                f"{self.rss_after >> 20} MiB after")


def client_campaign(bundle: Path, work: Path, count: int, seed: int) -> ClientReport:
    """``count`` hostile requests to one server of ``bundle`` (see the module's text)."""
    work.mkdir(parents=True, exist_ok=True)
    server = _Server(bundle, work / "clients.log", ("--max-slots", "2", "--max-queue", "4")).launch()
    rng = random.Random(seed)
    outcomes: collections.Counter[str] = collections.Counter()
    failures: list[str] = []
    try:
        assert server.wait() == "ready", (work / "clients.log").read_text()[-3000:]
        for _ in range(20):  # a warm-up: the memory the server holds when it has served
            _post(server.port, json.dumps(GOOD).encode())
            _stream_then(server.port, "drop", rng)
        before = server.rss()
        for index in range(count):
            started = time.monotonic()
            outcome = _hostile_request(server.port, rng)
            if time.monotonic() - started > BOUND_S * 2:
                failures.append(f"{index}: slow {outcome}")
            outcomes[outcome] += 1
            healthy = server.ready()
            answered = _post(server.port, json.dumps(GOOD).encode()) == "status:200"
            if not (healthy and answered):
                failures.append(f"{index}: after {outcome}: health {healthy}, a good request {answered}")
            if server.process is not None and server.process.poll() is not None:
                break
        after = server.rss()
        died = server.process is not None and server.process.poll() is not None
    finally:
        status = server.stop()
    return ClientReport(outcomes, failures, before, after, died or status != 0)


def serve_hostile(source: Path, work: Path, count: int, seed: int,
                  make: Callable[[Path, Path, int, int], str]) -> collections.Counter[str]:
    """``count`` hostile copies of ``source`` (``make``) served one after the other (see the module's text)."""
    counts: collections.Counter[str] = collections.Counter()
    work.mkdir(parents=True, exist_ok=True)
    for index in range(count):
        out = work / f"served-{index}"
        shutil.rmtree(out, ignore_errors=True)
        what = make(source, out, seed + 7919, index)
        server = _Server(out, work / f"served-{index}.log").launch()
        found = server.wait()
        if found == "ready" and _post(server.port, json.dumps(GOOD).encode()) not in ("status:200", "status:400"):
            found = "ready but not answering"
        code = server.stop()
        if found == "ready" and code != 0:
            found = f"died:{code}"
        counts[found] += 1
        if os.environ.get("JAXPORT_FUZZ_DEBUG") and found not in ("ready", "refused"):
            print(f"served {index} {found} {what}", file=sys.stderr)
        shutil.rmtree(out, ignore_errors=True)
    return counts
