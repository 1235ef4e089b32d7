"""End to end: what ``jaxport serve``'s OpenAI routes refuse at the door, and what they do off the event loop.

Only JSON bodies are read (a web page may post a form or ``text/plain`` to a server on the user's machine
without asking); a request from a web origin gets 403 unless ``--allow-origin`` names it; OpenAI's routes read
at most ``--max-openai-request-bytes`` and refuse a prompt text by its bytes before tokenizing it. The servers
run in subprocesses on 127.0.0.1 (:class:`tests.helpers.serving.Server`).
"""

from __future__ import annotations

import http.client
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import gpt_model as gpt
from tests.helpers.hostile_generation import BOMB_TEMPLATE
from tests.helpers.openai_serving import text_bundle, wait_for
from tests.helpers.serving import Server

pytest.importorskip("tokenizers", reason="needs the extra jaxport[text]")
pytest.importorskip("jinja2", reason="needs the extra jaxport[text]")

APP = "http://app.example:3000"
EVIL = "http://evil.example"
GOOD = {"model": "gpt", "prompt": [1, 2], "max_tokens": 2}


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return text_bundle(tmp_path_factory.mktemp("door"))


@pytest.fixture(scope="module")
def server(bundle: Path) -> Iterator[Server]:
    server = Server(bundle, (), bundle.parent / "door.log").start()
    yield server
    assert server.stop() == 0, server.output()


@pytest.fixture(scope="module")
def open_server(bundle: Path) -> Iterator[Server]:
    server = Server(bundle, ("--allow-origin", APP), bundle.parent / "open.log").start()
    yield server
    assert server.stop() == 0, server.output()


@pytest.fixture(scope="module")
def bombs(bundle: Path) -> Iterator[Server]:
    """A server of the model with :data:`BOMB_TEMPLATE`, its renders bounded at 15 s."""
    path = gpt.save(bundle.parent / "bombs" / "gpt", tokenizer=str(bundle.parent / "tokenizer.json"),
                    chat_template=BOMB_TEMPLATE)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("JAXPORT_TEMPLATE_SECONDS", "15")
        server = Server(path, (), bundle.parent / "bombs.log").start()
    yield server
    assert server.stop() == 0, server.output()


def call(server: Server, method: str, route: str, body: bytes | None = None,
         headers: Mapping[str, str] | None = None) -> tuple[int, dict[str, str], Any]:
    """The status, headers (lower-case names) and body (parsed if it is JSON, else text) of one request."""
    request = urllib.request.Request(f"http://{server.url}{route}", data=body, method=method,
                                     headers=dict(headers or {}))
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            status, found, raw = response.status, response.headers, response.read()
    except urllib.error.HTTPError as exc:
        status, found, raw = exc.code, exc.headers, exc.read()
    headers = {k.lower(): v for k, v in found.items()}
    return status, headers, json.loads(raw) if headers.get("content-type") == "application/json" else raw.decode()


def post(server: Server, body: Any, content_type: str | None = "application/json",
         **headers: str) -> tuple[int, dict[str, str], Any]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    sent = dict(headers, **({"Content-Type": content_type} if content_type else {}))
    return call(server, "POST", "/openai/v1/completions", data, sent)


def healthy(server: Server) -> bool:
    """Whether the server says it is ready and answers a good completion."""
    ready = call(server, "GET", "/v2/health/ready")[0] == 200
    status, _, body = post(server, GOOD)
    return ready and status == 200 and len(body["choices"][0]["token_ids"]) == 2


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=x", "application/json; charset=latin-1",
                                          None])
def test_a_body_that_is_not_json_gets_415_in_openais_shape(server: Server, content_type: str | None) -> None:
    refused = server.metric("jaxport_refused_requests_total", error="UnsupportedMediaType")
    status, _, body = post(server, GOOD, content_type)
    assert status == 415, body
    assert set(body["error"]) == {"message", "type", "param", "code"}
    assert body["error"]["code"] == "unsupported_media_type" and "application/json" in body["error"]["message"]
    assert server.metric("jaxport_refused_requests_total", error="UnsupportedMediaType") == refused + 1
    assert healthy(server)


@pytest.mark.parametrize("content_type", ["application/json", "application/json; charset=utf-8",
                                          "Application/JSON;charset=UTF-8"])
def test_json_with_or_without_a_charset_is_read(server: Server, content_type: str) -> None:
    status, _, body = post(server, GOOD, content_type)
    assert status == 200 and len(body["choices"][0]["token_ids"]) == 2, body


def test_a_cross_origin_preflight_and_post_are_refused_by_default(server: Server) -> None:
    preflight = {"Origin": APP, "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "content-type"}
    status, headers, body = call(server, "OPTIONS", "/openai/v1/completions", None, preflight)
    assert status == 403 and "access-control-allow-origin" not in headers, (status, headers)
    assert body["error"]["code"] == "forbidden_origin" and "--allow-origin" in body["error"]["message"]
    status, headers, body = post(server, GOOD, Origin=APP)
    assert status == 403 and "access-control-allow-origin" not in headers
    assert call(server, "GET", "/openai/v1/models", headers={"Origin": APP})[0] == 403
    assert call(server, "GET", "/v2/health/ready", headers={"Origin": APP})[0] == 403  # v2 too
    assert healthy(server)  # clients that are not browsers send no Origin


def test_allow_origin_admits_its_pages_and_only_them(open_server: Server) -> None:
    preflight = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"}
    status, headers, _ = call(open_server, "OPTIONS", "/openai/v1/completions", None, dict(preflight, Origin=APP))
    assert status == 200 and headers["access-control-allow-origin"] == APP, (status, headers)
    assert "POST" in headers["access-control-allow-methods"]
    status, headers, body = post(open_server, GOOD, Origin=APP)
    assert status == 200 and headers["access-control-allow-origin"] == APP and body["choices"]
    status, headers, _ = call(open_server, "OPTIONS", "/openai/v1/completions", None, dict(preflight, Origin=EVIL))
    assert status == 403 and "access-control-allow-origin" not in headers
    assert post(open_server, GOOD, Origin=EVIL)[0] == 403


def test_a_10_mb_prompt_is_refused_by_its_size_before_it_is_read(server: Server) -> None:
    body_bytes = json.dumps({"model": "gpt", "prompt": "the " * (10 * 1024 * 1024 // 4)}).encode()
    connection = http.client.HTTPConnection(server.url, timeout=60)
    try:  # the answer comes after the headers and the first bytes: the rest is never sent
        connection.putrequest("POST", "/openai/v1/completions")
        connection.putheader("Content-Type", "application/json")
        connection.putheader("Content-Length", str(len(body_bytes)))
        connection.endheaders(body_bytes[:65536])
        response = connection.getresponse()
        status, body = response.status, json.loads(response.read())
    finally:
        connection.close()
    assert status == 400, body
    assert "--max-openai-request-bytes" in body["error"]["message"] and "1048576" in body["error"]["message"]
    assert healthy(server)


def test_a_prompt_text_over_its_bytes_is_refused_before_it_is_tokenized(server: Server) -> None:
    bound = 16 * gpt.MAX_LENGTH  # 16 bytes for each token of the cache
    status, _, body = post(server, {"model": "gpt", "prompt": "the " * 600})
    assert status == 400 and body["error"]["param"] == "prompt", body
    assert "2400 bytes" in body["error"]["message"] and f"than the {bound}" in body["error"]["message"]
    assert "not tokenized" in body["error"]["message"]
    status, _, body = post(server, {"model": "gpt", "prompt": "the " * 10, "max_tokens": 1})  # under: read
    assert status == 200, body


def chat(server: Server, content: str) -> tuple[int, Any]:
    status, _, body = call(server, "POST", "/openai/v1/chat/completions", json.dumps(
        {"model": "gpt", "messages": [{"role": "user", "content": content}], "max_tokens": 2}).encode(),
        {"Content-Type": "application/json"})
    return status, body


def test_while_a_template_renders_health_a_stream_and_another_chat_answer(bombs: Server) -> None:
    done: list[str] = []
    spun: list[tuple[int, Any]] = []

    def spin() -> None:
        spun.append(chat(bombs, "spin"))
        done.append("spin")

    thread = threading.Thread(target=spin)
    thread.start()
    try:
        wait_for(bombs, "jaxport_preparing_requests", 1)  # the render has begun, off the event loop
        assert call(bombs, "GET", "/v2/health/ready")[0] == 200
        done.append("health")
        asked = {"model": "gpt", "prompt": [1, 2, 3], "max_tokens": 5, "temperature": 0}
        status, _, stream = call(bombs, "POST", "/openai/v1/completions", json.dumps(dict(asked, stream=True)).encode(),
                                 {"Content-Type": "application/json"})
        events = [json.loads(line[6:]) for line in stream.splitlines() if line.startswith("data: {")]
        streamed = [i for event in events for choice in event["choices"] for i in choice["token_ids"]]
        assert status == 200 and stream.rstrip().endswith("data: [DONE]"), stream
        assert streamed == post(bombs, asked)[2]["choices"][0]["token_ids"] and len(streamed) == 5  # unaffected
        done.append("stream")
        status, body = chat(bombs, "the dog")  # rendered by another child meanwhile
        assert status == 200 and body["choices"][0]["message"]["content"] is not None, body
        done.append("chat")
    finally:
        thread.join(60)
    assert done == ["health", "stream", "chat", "spin"]
    status, body = spun[0]
    assert status == 400 and "did not finish within its bound of 15 s" in body["error"]["message"], body
    assert bombs.metric("jaxport_preparing_requests") == 0


@pytest.mark.parametrize(("content", "bound"), [("loop", "4194304 characters"), ("boom", "256 MiB")])
def test_a_template_bomb_through_the_server_is_refused_by_its_bound(bombs: Server, content: str, bound: str) -> None:
    status, body = chat(bombs, content)
    assert status == 400 and bound in body["error"]["message"] and "chat template of" in body["error"]["message"]
    assert healthy(bombs) and chat(bombs, "the dog")[0] == 200
