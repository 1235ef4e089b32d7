"""End to end: ``jaxport serve`` on a generative bundle and its ONNX conversion, called with the ``openai`` client.

The server runs in a subprocess on 127.0.0.1 (:class:`tests.helpers.serving.Server`); every
request has a timeout and the client no retries. The models have a clear logit margin
(:mod:`tests.helpers.gpt_model`), so greedy tokens are exact.
"""

from __future__ import annotations

import json
import signal
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import jaxport
from tests.helpers.openai_serving import LONG_TOKENS, client, slow_bundle, text_bundle, token_ids, wait_for
from tests.helpers.openai_serving import post as _post
from tests.helpers.serving import Server

openai = pytest.importorskip("openai", reason="the OpenAI tests need the openai client (the dev extra)")
pytest.importorskip("tokenizers", reason="needs the extra jaxport[text]")
pytest.importorskip("jinja2", reason="needs the extra jaxport[text]")

PROMPTS = [[1, 2, 3], [4], [5, 6], [7, 8, 9, 10], [11, 3], [12], [13, 14, 15], [2, 2]]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return text_bundle(tmp_path_factory.mktemp("openai"))


@pytest.fixture(scope="module")
def generator(bundle: Path) -> Any:
    return jaxport.load_generator(bundle)


@pytest.fixture(scope="module")
def jax_server(bundle: Path) -> Iterator[Server]:
    server = Server(bundle, ("--max-slots", "4", "--max-request-bytes", "65536"), bundle.parent / "jax.log").start()
    yield server
    assert server.stop() == 0, server.output()


@pytest.fixture(scope="module")
def onnx_server(bundle: Path) -> Iterator[Server]:
    pytest.importorskip("onnxruntime", reason="serving an ONNX directory needs the jaxport[onnx] extra")
    onnx = bundle.parent / "onnx"
    jaxport.to_onnx(bundle, onnx)
    server = Server(onnx, ("--model-name", "gpt"), bundle.parent / "onnx.log").start()
    yield server
    assert server.stop() == 0, server.output()


@pytest.fixture(scope="module")
def slow(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return slow_bundle(tmp_path_factory.mktemp("slow") / "slow")


@pytest.fixture(params=["jax", "onnx"])
def server(request: pytest.FixtureRequest) -> Server:
    found: Server = request.getfixturevalue(f"{request.param}_server")
    return found


def test_the_model_is_listed_under_its_name(jax_server: Server, onnx_server: Server) -> None:
    assert [m.id for m in client(jax_server).models.list().data] == ["gpt"]
    assert [m.id for m in client(onnx_server).models.list().data] == ["gpt"]


def test_completions_give_generates_tokens_for_ids_and_seeds(server: Server, generator: Any) -> None:
    answer = client(server).completions.create(model="gpt", prompt=[1, 2, 3], max_tokens=8, temperature=0)
    choice = answer.choices[0]
    assert token_ids(choice) == generator.generate([1, 2, 3], 8)
    assert choice.text == generator.codec.decode(token_ids(choice))
    assert choice.finish_reason == "length"
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens, answer.usage.total_tokens) == (3, 8, 11)
    drawn = [token_ids(client(server).completions.create(model="gpt", prompt=[4, 5], max_tokens=10, temperature=1.5,
                                                           seed=seed).choices[0]) for seed in (3, 3, 4)]
    assert drawn[0] == drawn[1] == generator.generate([4, 5], 10, temperature=1.5, seed=3)
    assert drawn[2] == generator.generate([4, 5], 10, temperature=1.5, seed=4)


def test_a_streamed_completion_is_one_chunk_per_token_then_done(server: Server, generator: Any) -> None:
    expected = generator.generate("the cat sat", 6)
    chunks = list(client(server).completions.create(model="gpt", prompt="the cat sat", max_tokens=6, temperature=0,
                                                     stream=True, stream_options={"include_usage": True}))
    tokens = [c for c in chunks if c.choices and token_ids(c.choices[0])]
    assert len(tokens) == 6 and all(len(token_ids(c.choices[0])) == 1 for c in tokens)
    assert "".join(c.choices[0].text for c in chunks if c.choices) == expected
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "length"
    assert chunks[-1].usage.completion_tokens == 6 and chunks[-1].usage.prompt_tokens == len(
        generator.codec.encode("the cat sat"))
    whole = client(server).completions.create(model="gpt", prompt="the cat sat", max_tokens=6, temperature=0)
    assert whole.choices[0].text == expected


def test_chat_completions_go_through_the_chat_template(server: Server, generator: Any) -> None:
    messages = [{"role": "user", "content": "the dog"}, {"role": "assistant", "content": "sat"}]
    expected = generator.chat(messages, 5)
    answer = client(server).chat.completions.create(model="gpt", messages=messages, max_tokens=5, temperature=0)
    assert answer.choices[0].message.content == expected and answer.choices[0].finish_reason == "length"
    streamed = client(server).chat.completions.create(model="gpt", messages=messages, max_completion_tokens=5,
                                                      temperature=0, stream=True)
    assert "".join(c.choices[0].delta.content or "" for c in streamed if c.choices) == expected
    with pytest.raises(openai.BadRequestError, match="the first message is not the user"):
        client(server).chat.completions.create(model="gpt", messages=[{"role": "system", "content": "hi"}])


def test_stop_texts_and_stop_ids_end_the_completion(jax_server: Server, generator: Any) -> None:
    ids = generator.generate([1, 2, 3], 12)
    cut = next(i for i in range(2, 12) if ids[i] not in ids[:i])
    answer = client(jax_server).completions.create(model="gpt", prompt=[1, 2, 3], max_tokens=12, temperature=0,
                                                  stop=[ids[cut]])  # ids: jaxport's extension
    assert token_ids(answer.choices[0]) == ids[:cut] and answer.choices[0].finish_reason == "stop"
    text = generator.codec.decode(ids)
    stop = text[len(text) // 2:len(text) // 2 + 2]
    answer = client(jax_server).completions.create(model="gpt", prompt=[1, 2, 3], max_tokens=12, temperature=0,
                                                  stop=stop)
    assert answer.choices[0].text == text[:text.find(stop)] and answer.choices[0].finish_reason == "stop"


def test_eight_concurrent_streams_each_get_their_own_tokens(server: Server, generator: Any) -> None:
    expected = [generator.generate(p, 16 - len(p)) for p in PROMPTS]
    got: dict[int, list[int]] = {}

    def stream(i: int) -> None:
        chunks = client(server).completions.create(model="gpt", prompt=PROMPTS[i], max_tokens=16 - len(PROMPTS[i]),
                                                   temperature=0, stream=True)
        got[i] = [t for c in chunks if c.choices for t in token_ids(c.choices[0])]

    threads = [threading.Thread(target=stream, args=(i,)) for i in range(len(PROMPTS))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert [got.get(i) for i in range(len(PROMPTS))] == expected


@pytest.mark.parametrize(("request_body", "param"), [
    ({"prompt": [1], "n": 17}, "n"),
    ({"prompt": [1], "temperature": -1}, "temperature"),
    ({"prompt": [1], "top_p": 0}, "top_p"),
    ({"prompt": [1], "max_tokens": 0}, "max_tokens"),
    ({"prompt": [1], "max_tokens": 17}, "max_tokens"),
    ({"prompt": list(range(1, 18))}, "prompt"),
    ({"prompt": [1, 99]}, "prompt"),
    ({"prompt": ""}, "prompt"),
    ({"prompt": [1], "stop": [99]}, "stop"),
    ({"prompt": [1], "logprobs": 6}, "logprobs"),
    ({"prompt": 3}, "prompt"),
    ({"prompt": [1], "max_tokens": "8"}, "max_tokens"),
    ({}, "prompt"),
])
def test_bad_requests_get_openais_error_shape_with_400(jax_server: Server, request_body: dict[str, Any],
                                                       param: str) -> None:
    status, body = _post(jax_server, "completions", {"model": "gpt", **request_body})
    assert status == 400, body
    assert set(body["error"]) == {"message", "type", "param", "code"} and body["error"]["param"].startswith(param)
    assert client(jax_server).completions.create(model="gpt", prompt=[1], max_tokens=2).choices[0].text is not None


def test_a_body_over_the_limit_gets_openais_error_shape(jax_server: Server) -> None:
    status, body = _post(jax_server, "completions", {"model": "gpt", "prompt": "the " * 20000})
    assert status == 400 and "--max-request-bytes" in body["error"]["message"], body
    assert body["error"]["type"] == "invalid_request_error"


def test_malformed_json_an_unknown_model_and_text_without_a_tokenizer(jax_server: Server, slow_server: Server) -> None:
    status, body = _post(jax_server, "completions", b"{not json")
    assert status == 400 and body["error"]["type"] == "invalid_request_error"
    with pytest.raises(openai.NotFoundError, match="this server serves 'gpt'"):
        client(jax_server).completions.create(model="other", prompt=[1])
    for prompt, stop in (("the cat", None), ([1], "cat")):
        with pytest.raises(openai.BadRequestError, match="text needs a tokenizer"):
            client(slow_server).completions.create(model="slow", prompt=prompt, stop=stop, max_tokens=2)
    with pytest.raises(openai.BadRequestError, match="has no chat template"):
        client(slow_server).chat.completions.create(model="slow", messages=[{"role": "user", "content": "hi"}])


@pytest.fixture(scope="module")
def slow_server(slow: Path) -> Iterator[Server]:
    server = Server(slow, ("--max-slots", "1", "--max-queue", "1"), slow.parent / "slow.log").start()
    yield server
    assert server.stop() == 0, server.output()


def test_over_the_queue_a_request_gets_429_with_retry_after(slow_server: Server) -> None:
    running = client(slow_server).completions.create(model="slow", prompt=[1], max_tokens=LONG_TOKENS, stream=True)
    next(iter(running))  # in the slot until the test closes it
    queued = client(slow_server).completions.create(model="slow", prompt=[2], max_tokens=3, stream=True)
    wait_for(slow_server, "jaxport_queued_requests", 1, model="slow")  # admitted when create returned
    with pytest.raises(openai.RateLimitError) as refused:
        client(slow_server).completions.create(model="slow", prompt=[3], max_tokens=2)
    assert int(refused.value.response.headers["Retry-After"]) >= 1
    assert refused.value.body["code"] == "queue_full"
    running.close()  # frees the slot for the queued request
    assert len([c for c in queued if c.choices and token_ids(c.choices[0])]) == 3
    assert slow_server.metric("jaxport_refused_requests_total", function="slow", error="SchedulerBusyError") >= 1
    wait_for(slow_server, "jaxport_running_requests", 0, model="slow")


def test_a_client_that_goes_away_frees_its_slot(slow_server: Server) -> None:
    sent = slow_server.metric("jaxport_generated_tokens_total", model="slow")
    stream = client(slow_server).completions.create(model="slow", prompt=[1], max_tokens=LONG_TOKENS, stream=True)
    next(iter(stream))
    stream.close()
    wait_for(slow_server, "jaxport_running_requests", 0, model="slow")  # cancelled, far from its length
    answer = client(slow_server).completions.create(model="slow", prompt=[2], max_tokens=3)  # gets the slot
    assert len(token_ids(answer.choices[0])) == 3
    assert slow_server.metric("jaxport_generated_tokens_total", model="slow") - sent < LONG_TOKENS
    assert slow_server.metric("jaxport_time_to_first_token_seconds_count", model="slow") >= 2


def test_sigterm_drains_the_running_streams_and_exits_0(slow: Path) -> None:
    server = Server(slow, ("--max-slots", "1", "--drain-seconds", "30"), slow.parent / "term.log").start()
    try:
        stream = client(server).completions.create(model="slow", prompt=[1], max_tokens=15, stream=True)
        chunks = iter(stream)
        first = next(chunks)
        assert server.process is not None
        server.process.send_signal(signal.SIGTERM)
        rest = list(chunks)
        assert len(token_ids(first.choices[0])) + sum(len(token_ids(c.choices[0])) for c in rest if c.choices) == 15
        assert rest[-1].choices[0].finish_reason == "length"
    finally:
        assert server.stop() == 0, server.output()


def test_past_the_drain_seconds_a_running_stream_is_cancelled_with_an_error_event(slow: Path) -> None:
    server = Server(slow, ("--max-slots", "1", "--drain-seconds", "0"), slow.parent / "cut.log").start()
    try:
        chunks = iter(client(server).completions.create(model="slow", prompt=[1], max_tokens=LONG_TOKENS,
                                                        stream=True))
        next(chunks)
        assert server.process is not None
        server.process.send_signal(signal.SIGTERM)
        with pytest.raises(openai.APIError, match="shutting down"):
            for _ in range(LONG_TOKENS):  # bounded: the tokens left
                next(chunks)
    finally:
        assert server.stop() == 0, server.output()


def test_time_to_first_token_and_tokens_are_counted(jax_server: Server) -> None:
    client(jax_server).completions.create(model="gpt", prompt=[1], max_tokens=4)
    assert jax_server.metric("jaxport_time_to_first_token_seconds_count", model="gpt") >= 1
    assert jax_server.metric("jaxport_generated_tokens_total", model="gpt") >= 4
    assert jax_server.metric("jaxport_running_requests", model="gpt") == 0


@pytest.mark.parametrize(("body", "message"), [
    (b'{"model": "gpt", "prompt": [1], "temperature": NaN}',
     "Invalid 'temperature': expected a finite number, but got nan instead."),
    ({"prompt": [1], "temperature": 3}, "Invalid 'temperature': decimal above maximum value. Expected a value <= 2, "
                                        "but got 3 instead."),
    ({"prompt": [1], "max_tokens": 0}, "Invalid 'max_tokens': integer below minimum value. Expected a value >= 1, "
                                       "but got 0 instead."),
    ({"prompt": ["a"]}, "Invalid type for 'prompt[0]': expected an integer, but got a string instead."),
    ({"prompt": [1], "best_of": 2}, "Unrecognized request argument supplied: best_of"),
    ({}, "Missing required parameter: 'prompt'."),
    ({"prompt": [1], "max_tokens": 17}, "Invalid 'max_tokens': a prompt of 1 tokens and 17 new ones need 17 cache "
                                        "slots; the cache holds 16: ask for at most 16 new tokens, or give a shorter "
                                        "prompt"),
    ({"prompt": [1, 99]}, "Invalid 'prompt[1]': 99 is outside the vocabulary [0, 32)"),
])
def test_refusals_say_what_to_change_in_openais_words(jax_server: Server, body: dict[str, Any] | bytes,
                                                       message: str) -> None:
    status, answer = _post(jax_server, "completions", body if isinstance(body, bytes) else {"model": "gpt", **body})
    assert (status, answer["error"]["message"]) == (400, message)


def test_the_models_list_and_the_log_say_how_requests_are_scheduled(jax_server: Server,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from jaxport.application.cli.main import main

    with urllib.request.urlopen(f"http://{jax_server.url}/openai/v1/models", timeout=60) as answer:
        card = json.load(answer)["data"][0]
    assert (card["scheduling"], card["max_slots"]) == ("continuous", 4) and "per-row positions" in \
        card["scheduling_reason"]
    assert "continuous batching: requests join a decode batch of 4 slots (--max-slots)" in jax_server.log.read_text()
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    assert "requests run one at a time and --max-slots does not apply" in " ".join(capsys.readouterr().out.split())
