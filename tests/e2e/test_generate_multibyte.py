"""Text whose characters span tokens (CJK, emoji, a combining mark, split by a byte-level BPE tokenizer) comes out
whole on every path: ``generate``, ``stream``, ``chat`` and the OpenAI server (streamed and whole, with a stop
text), on JAX, ONNX Runtime, LiteRT, IREE and a SavedModel.

The tokenizer is built here with ``tokenizers`` (no hub): GPT-2's byte-level alphabet, 32 tokens, the ones that
the model generates after the prompt ``"ok ok"`` each spelling the next bytes of :data:`TARGET` cut through its
characters (so a character's first bytes come with one token and its last with a later one). Each runtime's
directory is converted once for the module.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import jaxport
from jaxport.domain.targets.registry import TARGETS
from tests.helpers import gpt_model as gpt
from tests.helpers.openai_serving import client
from tests.helpers.serving import Server

pytest.importorskip("tokenizers", reason="needs the extra jaxport[text]")
pytest.importorskip("jinja2", reason="needs the extra jaxport[text]")
from tokenizers import Tokenizer, decoders, models, pre_tokenizers  # noqa: E402  # after the skip

PROMPT = "ok ok"
NEW = 8  # with a prompt padded to 8 (LiteRT, IREE), the most the cache of 16 holds
TARGET = " e\u0301日本😀 €5 한국 ok"
RUNTIMES = ["jax", "onnx", "litert", "iree", "savedmodel"]
#: LiteRT and IREE compile one prompt length and batch size.
STATIC = {"prefill": [{"b": 1, "s": 8}], "decode": [{"b": 1}]}


def _byte_chars() -> dict[int, str]:
    """GPT-2's byte-level alphabet: each byte as the character its tokens spell it with."""
    kept = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars, extra = {b: chr(b) for b in kept}, 0
    for b in range(256):
        if b not in chars:
            chars[b], extra = chr(256 + extra), extra + 1
    return chars


def _spelled(data: bytes) -> str:
    chars = _byte_chars()
    return "".join(chars[b] for b in data)


def byte_level_tokenizer(path: Path) -> Path:
    """The tokenizer of :data:`gpt.VOCAB` tokens, saved as ``tokenizer.json`` at ``path``."""
    vocab = {_spelled(b"o"): 0, _spelled(b"k"): 1, _spelled(b" "): 2}
    prompt = [0, 1, 2, 0, 1]  # "ok ok", as the tokenizer encodes it (no merges: one token per byte)
    target, cuts = TARGET.encode(), [2, 1, 3, 2, 1, 2, 4, 1]  # sizes that cut through the characters
    at, i = 0, 0
    for token in gpt.reference(False, prompt, NEW):
        if token in vocab.values() or at >= len(target):
            continue
        piece, at, i = target[at:at + cuts[i % len(cuts)]], at + cuts[i % len(cuts)], i + 1
        vocab[_spelled(piece)] = token
    for token in range(gpt.VOCAB):
        if token not in vocab.values():
            vocab[f"zz{token}"] = token
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    assert tokenizer.encode(PROMPT).ids == prompt
    tokenizer.save(str(path))
    return path


@pytest.fixture(scope="module")
def expected(directories: dict[str, Path]) -> str:
    tokenizer = Tokenizer.from_file(str(directories["root"] / "tokenizer.json"))
    text = str(tokenizer.decode(gpt.reference(False, tokenizer.encode(PROMPT).ids, NEW)))
    split = [tokenizer.decode([t]) for t in gpt.reference(False, tokenizer.encode(PROMPT).ids, NEW)]
    assert any("\ufffd" in piece for piece in split) and any(ord(c) > 0x7F and c != "\ufffd" for c in text)
    return text


@pytest.fixture(scope="module")
def directories(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("multibyte")
    tokenizer = byte_level_tokenizer(root / "tokenizer.json")
    bundle = gpt.save(root / "model", tokenizer=str(tokenizer),
                      chat_template="{% for m in messages %}{{ m['content'] }}{% endfor %}")
    return {"root": root, "jax": bundle}


def _directory(directories: dict[str, Path], runtime: str) -> Path:
    if runtime not in directories:
        missing = [m for m in TARGETS[runtime].loads if importlib.util.find_spec(m) is None]
        if missing:
            pytest.skip(f"{missing[0]} is not installed (pip install 'jaxport[{TARGETS[runtime].extra}]')")
        directories[runtime] = directories["root"] / runtime
        jaxport.convert(directories["jax"], directories[runtime], to=runtime,
                        dims=STATIC if runtime in ("litert", "iree") else None)
    return directories[runtime]


@pytest.fixture(scope="module", params=RUNTIMES)
def runtime(request: pytest.FixtureRequest, directories: dict[str, Path]) -> tuple[str, Path]:
    name: str = request.param
    return name, _directory(directories, name)


@pytest.fixture(scope="module")
def server(runtime: tuple[str, Path]) -> Iterator[Server]:
    pytest.importorskip("openai", reason="the OpenAI tests need the openai client (the dev extra)")
    pytest.importorskip("kserve", reason="jaxport serve needs the extra jaxport[serve]")
    name, path = runtime
    served = Server(path, ("--model-name", "gpt"), path.parent / f"{name}.log").start()
    yield served
    assert served.stop() == 0, served.output()


def test_generate_stream_and_chat_give_whole_characters(runtime: tuple[str, Path], expected: str) -> None:
    generator = jaxport.load_generator(runtime[1])
    assert generator.generate(PROMPT, NEW) == expected
    tokens = list(generator.stream(PROMPT, NEW))
    assert "".join(t.text or "" for t in tokens) == expected
    assert [t.id for t in tokens] == gpt.reference(False, [0, 1, 2, 0, 1], NEW)  # every token, in order
    assert generator.chat([{"role": "user", "content": PROMPT}], NEW) == expected
    if runtime[0] not in ("litert", "iree"):  # compiled for one row here
        assert generator.generate([PROMPT, PROMPT], NEW) == [expected, expected]
        rows = list(generator.stream([PROMPT, PROMPT], NEW))
        assert ["".join(t.text or "" for t in rows if t.row == r) for r in (0, 1)] == [expected, expected]


def test_the_server_gives_whole_characters_streamed_and_whole(server: Server, expected: str) -> None:
    openai = client(server)
    whole = openai.completions.create(model="gpt", prompt=PROMPT, max_tokens=NEW, temperature=0)
    assert whole.choices[0].text == expected
    chunks = openai.completions.create(model="gpt", prompt=PROMPT, max_tokens=NEW, temperature=0, stream=True)
    assert "".join(c.choices[0].text for c in chunks if c.choices) == expected
    messages = [{"role": "user", "content": PROMPT}]
    chat = openai.chat.completions.create(model="gpt", messages=messages, max_tokens=NEW, temperature=0)
    assert chat.choices[0].message.content == expected
    streamed = openai.chat.completions.create(model="gpt", messages=messages, max_tokens=NEW, temperature=0,
                                              stream=True)
    assert "".join(c.choices[0].delta.content or "" for c in streamed if c.choices) == expected


def test_a_stop_text_that_begins_inside_a_token_ends_the_text_there(server: Server, expected: str) -> None:
    stop = next(c for c in expected if ord(c) > 0x7F and c != "\ufffd")
    openai = client(server)
    whole = openai.completions.create(model="gpt", prompt=PROMPT, max_tokens=NEW, temperature=0, stop=stop)
    assert (whole.choices[0].text, whole.choices[0].finish_reason) == (expected[:expected.index(stop)], "stop")
    chunks = openai.completions.create(model="gpt", prompt=PROMPT, max_tokens=NEW, temperature=0, stop=[stop],
                                       stream=True)
    assert "".join(c.choices[0].text for c in chunks if c.choices) == expected[:expected.index(stop)]


def test_the_models_list_says_how_requests_are_scheduled(runtime: tuple[str, Path], server: Server) -> None:
    with urllib.request.urlopen(f"http://{server.url}/openai/v1/models", timeout=60) as answer:
        card = json.load(answer)["data"][0]
    if runtime[0] in ("litert", "iree"):  # their runners cannot fill one row of the cache
        assert (card["scheduling"], card["max_slots"]) == ("one_at_a_time", 1)
        assert "cannot fill one row of the cache; --max-slots 8 does not apply" in card["scheduling_reason"]
    else:
        assert (card["scheduling"], card["max_slots"]) == ("continuous", 8)


def test_a_request_without_max_tokens_gets_what_the_cache_holds(server: Server) -> None:
    request = urllib.request.Request(f"http://{server.url}/openai/v1/completions", method="POST",
                                     data=json.dumps({"model": "gpt", "prompt": PROMPT, "temperature": 0}).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        body: dict[str, Any] = json.load(answer)
    choice = body["choices"][0]
    assert choice["finish_reason"] == "length" and len(choice["token_ids"]) >= NEW


_LOAD = "import sys, jaxport; print(jaxport.load_generator(sys.argv[1]).generate('ok ok', 2))"


def test_litert_loads_without_its_info_lines_unless_asked(directories: dict[str, Path]) -> None:
    path = _directory(directories, "litert")
    quiet = subprocess.run([sys.executable, "-c", _LOAD, str(path)], capture_output=True, text=True, timeout=300,
                           env={k: v for k, v in os.environ.items() if k != "JAXPORT_LOG"})
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr[-3000:]
    asked = subprocess.run([sys.executable, "-c", _LOAD, str(path)], capture_output=True, text=True, timeout=300,
                           env={**os.environ, "JAXPORT_LOG": "1"})
    assert asked.returncode == 0 and "INFO: [environment.cc" in asked.stderr, asked.stderr[-3000:]
    assert quiet.stdout == asked.stdout
