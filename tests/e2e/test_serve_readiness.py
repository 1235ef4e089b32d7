"""``jaxport serve`` is not ready while it loads: ``/v2/health/ready`` says false and OpenAI's routes answer 503.

The server (:class:`jaxport.adapters.kserve.server.KServeServer`, with the loading calls of ``jaxport serve``:
:func:`jaxport.application.serving.service.served_loads`) runs on a thread of the test's process, and its
loading call waits for the test: the window in which it listens but has not loaded is the test's to hold,
not a timing. Every wait is bounded.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from jaxport.application.conversion.api import open_directory
from jaxport.application.serving.service import served_loads
from jaxport.domain.serving.options import ServeOptions
from tests.helpers import gpt_model as gpt
from tests.helpers.serving import HOST, START_TIMEOUT_S

pytest.importorskip("kserve", reason="serving needs the extra jaxport[serve]")
openai = pytest.importorskip("openai", reason="the OpenAI tests need the openai client (the dev extra)")


def _get(url: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def _post(url: str, body: dict[str, Any]) -> tuple[int, Any]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _wait_ready(base: str, runner: threading.Thread) -> None:
    """Polls ``/v2/health/ready`` until it says ready (bounded: START_TIMEOUT_S)."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while _get(f"{base}/v2/health/ready")[0] != 200:
        assert runner.is_alive() and time.monotonic() < deadline, "the server stopped or never got ready"
        time.sleep(0.05)


def test_while_it_loads_it_is_not_ready_and_openai_answers_503(tmp_path: Path) -> None:
    from jaxport.adapters.kserve.metrics import serving_metrics
    from jaxport.adapters.kserve.server import KServeServer

    options = ServeOptions(HOST, 0, 0, max_slots=2, max_queue=2)
    load, generative = served_loads(open_directory(gpt.save(tmp_path / "gpt")), options)
    loading, release = threading.Event(), threading.Event()

    def held() -> Any:  # the server's own load, once the test has looked at the server loading
        loading.set()
        assert release.wait(START_TIMEOUT_S), "the test never let the load go on"
        return load()

    server = KServeServer(options, serving_metrics())
    failed: list[BaseException] = []

    def run() -> None:
        try:
            server.run(held, generative)
        except BaseException as exc:  # noqa: BLE001 - said by the test's assertion below
            failed.append(exc)

    runner = threading.Thread(target=run, name="test-serve", daemon=True)
    runner.start()
    try:
        assert loading.wait(START_TIMEOUT_S), failed
        base = f"http://{HOST}:{server.http_port}"  # bound and listening before the load is called
        assert _get(f"{base}/v2/health/live")[0] == 200
        assert _get(f"{base}/v2/health/ready")[0] == 503
        status, body = _post(f"{base}/openai/v1/completions", {"model": "gpt", "prompt": [1], "max_tokens": 2})
        assert status == 503, body
        assert body == {"error": {"message": "The model is not ready yet", "type": "server_error", "param": None,
                                  "code": "not_ready"}}
        status, body = _post(f"{base}/openai/v1/chat/completions",
                             {"model": "gpt", "messages": [{"role": "user", "content": "hi"}]})
        assert status == 503 and body["error"]["code"] == "not_ready", body
        assert _get(f"{base}/openai/v1/models") == (200, {"object": "list", "data": []})
        release.set()
        _wait_ready(base, runner)
        client = openai.OpenAI(base_url=f"{base}/openai/v1", api_key="unused", max_retries=0, timeout=60.0)
        assert [m.id for m in client.models.list().data] == ["gpt"]
        answer = client.completions.create(model="gpt", prompt=[1, 2, 3], max_tokens=4, temperature=0)
        assert answer.choices[0].model_extra["token_ids"] == gpt.reference(False, [1, 2, 3], 4)
    finally:
        release.set()
        server.stop()
        runner.join(60)
    assert not runner.is_alive() and not failed, failed
