"""End to end: OpenAI's sampling fields (``logprobs``, ``n``, penalties, ``logit_bias``, ``seed``) on
``jaxport serve``, called with the ``openai`` client, against references computed here from the model's own
step, teacher-forced (:mod:`tests.helpers.gpt_model`: its step over the prompt and the tokens served).

One server (the positions model with a tokenizer, continuous batching over 4 slots) for the module.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport
from tests.helpers import gpt_model as gpt
from tests.helpers.openai_serving import client, post, text_bundle, token_ids
from tests.helpers.serving import Server

openai = pytest.importorskip("openai", reason="the OpenAI tests need the openai client (the dev extra)")
pytest.importorskip("tokenizers", reason="needs the extra jaxport[text]")
pytest.importorskip("jinja2", reason="needs the extra jaxport[text]")

PROMPT = [1, 2, 3]
#: The model's logits are 10 at its pick plus at most 0.1: a bias of 10.5 makes a token win every step.
FAVOURED = 9


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Any]]:
    """The server of the text model (4 slots) and the model's own generator, for the module."""
    path = text_bundle(tmp_path_factory.mktemp("sampling"))
    running = Server(path, ("--max-slots", "4"), path.parent / "serve.log").start()
    yield running, jaxport.load_generator(path)
    assert running.stop() == 0, running.output()


@pytest.fixture
def server(served: tuple[Server, Any]) -> Server:
    return served[0]


@pytest.fixture
def generator(served: tuple[Server, Any]) -> Any:
    return served[1]


def teacher_logits(sequence: list[int]) -> np.ndarray:
    """The model's logits after each token of ``sequence`` (``(len, vocab)``, float64): its own step run once
    over the whole sequence from an empty cache (the step is causal: each position sees those before it)."""
    cache = {k: jnp.zeros(s.shape, s.dtype) for k, s in gpt.empty_cache(1, shared_index=False).items()}
    positions = jnp.arange(len(sequence), dtype=jnp.int32)[None]
    step = jax.jit(gpt._positions_step)  # noqa: SLF001 - the model's own step
    logits, _ = step(gpt.make_params(), jnp.asarray([sequence], jnp.int32), positions, cache)
    return np.asarray(logits[0], np.float64)


def log_softmax(x: np.ndarray) -> np.ndarray:
    shifted = x - x.max(axis=-1, keepdims=True)
    out: np.ndarray = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    return out


def greedy_reference(prompt: list[int], count: int, bias: dict[int, float], presence: float,
                     frequency: float) -> list[int]:
    """Greedy tokens under OpenAI's definitions: logits - count*frequency - (count>0)*presence + bias."""
    out: list[int] = []
    for _ in range(count):
        x = teacher_logits(prompt + out)[-1].copy()
        for token, b in bias.items():
            x[token] += b
        for token in set(out):
            x[token] -= out.count(token) * frequency + presence
        out.append(int(np.argmax(x)))
    return out


def test_completion_logprobs_are_the_log_softmax_of_the_models_logits(server: Server, generator: Any) -> None:
    answer = client(server).completions.create(model="gpt", prompt=PROMPT, max_tokens=6, temperature=0, logprobs=3)
    choice = answer.choices[0]
    ids = token_ids(choice)
    expected = log_softmax(teacher_logits(PROMPT + ids))[len(PROMPT) - 1:-1]
    got = choice.logprobs
    np.testing.assert_allclose(got.token_logprobs, [expected[i, t] for i, t in enumerate(ids)], atol=1e-4)
    assert got.tokens == [generator.codec.decode([t]) for t in ids]
    texts = [generator.codec.decode([t]) for t in range(gpt.VOCAB)]
    for step, top in enumerate(got.top_logprobs):  # keyed by text; near-ties may come in either order
        third = np.sort(expected[step])[-3]
        assert 1 <= len(top) <= 3 and max(top.values()) == pytest.approx(expected[step].max(), abs=1e-4)
        for text, logprob in top.items():
            assert logprob >= third - 1e-4 and any(
                texts[t] == text and abs(expected[step, t] - logprob) < 1e-4 for t in range(gpt.VOCAB))
    assert got.text_offset == [len(generator.codec.decode(ids[:i])) for i in range(len(ids))]
    streamed = [c for c in client(server).completions.create(model="gpt", prompt=PROMPT, max_tokens=6, temperature=0,
                                                               logprobs=0, stream=True) if c.choices]
    with_tokens = [c.choices[0] for c in streamed if token_ids(c.choices[0])]
    assert [c.logprobs.token_logprobs[0] for c in with_tokens] == pytest.approx(got.token_logprobs, abs=1e-6)
    assert all(c.logprobs.top_logprobs == [{}] for c in with_tokens)


def test_chat_logprobs_streamed_and_whole(server: Server, generator: Any) -> None:
    messages = [{"role": "user", "content": "the dog"}]
    prompt = generator.codec.encode(generator.render_chat(messages))
    whole = client(server).chat.completions.create(model="gpt", messages=messages, max_tokens=5, temperature=0,
                                                   logprobs=True, top_logprobs=2)
    ids = token_ids(whole.choices[0])
    expected = log_softmax(teacher_logits(prompt + ids))[len(prompt) - 1:-1]
    content = whole.choices[0].logprobs.content
    assert [c.logprob for c in content] == pytest.approx([expected[i, t] for i, t in enumerate(ids)], abs=1e-4)
    assert [c.token for c in content] == [generator.codec.decode([t]) for t in ids]
    assert all(c.bytes == list(c.token.encode()) and len(c.top_logprobs) == 2 for c in content)
    assert [c.top_logprobs[0].logprob for c in content] == pytest.approx([expected[i].max() for i in range(len(ids))],
                                                                         abs=1e-4)
    streamed = client(server).chat.completions.create(model="gpt", messages=messages, max_tokens=5, temperature=0,
                                                      logprobs=True, top_logprobs=2, stream=True)
    pieces = [c.choices[0].logprobs.content[0] for c in streamed if c.choices and c.choices[0].logprobs
              and c.choices[0].logprobs.content]
    assert [p.logprob for p in pieces] == pytest.approx([c.logprob for c in content], abs=1e-6)
    plain = client(server).chat.completions.create(model="gpt", messages=messages, max_tokens=5, temperature=0)
    assert plain.choices[0].logprobs is None


def test_n_choices_with_a_seed_are_reproducible_each_its_own_seed(server: Server, generator: Any) -> None:
    def ask() -> list[list[int]]:
        answer = client(server).completions.create(model="gpt", prompt=[4, 5], max_tokens=8, temperature=1.5, n=3,
                                                   seed=11)
        assert [c.index for c in answer.choices] == [0, 1, 2] and answer.usage.completion_tokens == 24
        return [token_ids(c) for c in answer.choices]

    first = ask()
    assert ask() == first
    assert first == [generator.generate([4, 5], 8, temperature=1.5, seed=11 + i) for i in range(3)]
    streamed = client(server).chat.completions.create(model="gpt", messages=[{"role": "user", "content": "a cat"}],
                                                      max_tokens=4, temperature=1.5, n=3, seed=2, stream=True)
    rows: dict[int, list[int]] = {}
    for chunk in streamed:
        for choice in chunk.choices:
            rows.setdefault(choice.index, []).extend(token_ids(choice))
    whole = client(server).chat.completions.create(model="gpt", messages=[{"role": "user", "content": "a cat"}],
                                                   max_tokens=4, temperature=1.5, n=3, seed=2)
    assert [rows[i] for i in range(3)] == [token_ids(c) for c in whole.choices]


def test_a_logit_bias_of_minus_100_moves_the_greedy_token(server: Server, generator: Any) -> None:
    greedy = generator.generate(PROMPT, 4)
    answer = client(server).completions.create(model="gpt", prompt=PROMPT, max_tokens=4, temperature=0,
                                               logit_bias={str(greedy[0]): -100})
    ids = token_ids(answer.choices[0])
    assert ids[0] != greedy[0]
    assert ids == greedy_reference(PROMPT, 4, {greedy[0]: -100.0}, 0.0, 0.0)
    assert ids == generator.generate(PROMPT, 4, logit_bias={greedy[0]: -100})


def test_penalties_change_the_tokens_as_openai_defines_them(server: Server, generator: Any) -> None:
    bias = {FAVOURED: 10.5}  # the favoured token wins every step until the penalties weigh on it
    favoured = token_ids(client(server).completions.create(
        model="gpt", prompt=PROMPT, max_tokens=8, temperature=0, logit_bias={str(FAVOURED): 10.5}).choices[0])
    assert favoured == [FAVOURED] * 8
    for presence, frequency in ((1.0, 0.0), (0.0, 0.3), (0.2, 0.2)):
        answer = client(server).completions.create(model="gpt", prompt=PROMPT, max_tokens=8, temperature=0,
                                                   logit_bias={str(FAVOURED): 10.5}, presence_penalty=presence,
                                                   frequency_penalty=frequency)
        ids = token_ids(answer.choices[0])
        assert ids == greedy_reference(PROMPT, 8, bias, presence, frequency), (presence, frequency)
        assert ids.count(FAVOURED) < 8
        assert ids == generator.generate(PROMPT, 8, logit_bias=bias, presence_penalty=presence,
                                         frequency_penalty=frequency)


@pytest.mark.parametrize(("route", "body", "message"), [
    ("completions", {"prompt": [1], "logit_bias": {"99": 1}},
     "Invalid 'logit_bias': the key 99 is not a token id of the vocabulary [0, 32)"),
    ("completions", {"prompt": [1], "logit_bias": {"a": 1}},
     "Invalid 'logit_bias': the key 'a' is not a token id (an integer, as a string)"),
    ("completions", {"prompt": [1], "logit_bias": {"1": 101}},
     "Invalid 'logit_bias': the bias 101.0 of token 1 is not a number in [-100, 100]"),
    ("completions", {"prompt": [1], "presence_penalty": 3},
     "Invalid 'presence_penalty': decimal above maximum value. Expected a value <= 2, but got 3 instead."),
    ("completions", {"prompt": [1], "logprobs": 6},
     "Invalid 'logprobs': integer above maximum value. Expected a value <= 5, but got 6 instead."),
    ("completions", {"prompt": [1], "n": 17},
     "Invalid 'n': integer above maximum value. Expected a value <= 16, but got 17 instead."),
    ("chat/completions", {"messages": [{"role": "user", "content": "a"}], "top_logprobs": 2},
     "Invalid 'top_logprobs': top_logprobs needs logprobs set to true"),
])
def test_bad_sampling_fields_are_refused_in_openais_words(server: Server, route: str, body: dict[str, Any],
                                                          message: str) -> None:
    status, answer = post(server, route, {"model": "gpt", **body})
    assert (status, answer["error"]["message"]) == (400, message)


def test_generators_stream_gives_the_same_logprobs(generator: Any) -> None:
    tokens = list(generator.stream(PROMPT, 5, logprobs=2))
    ids = [t.id for t in tokens]
    expected = log_softmax(teacher_logits(PROMPT + ids))[len(PROMPT) - 1:-1]
    assert [t.logprob.logprob for t in tokens] == pytest.approx([expected[i, t] for i, t in enumerate(ids)], abs=1e-4)
    for step, token in enumerate(tokens):  # the top two: the pick, then the runner-up (near-ties either way)
        (first, _), (second, logprob) = token.logprob.top
        assert first == ids[step] and logprob == pytest.approx(expected[step, second], abs=1e-4)
        assert logprob == pytest.approx(np.sort(expected[step])[-2], abs=1e-4)
    assert all(t.logprob is None for t in generator.stream(PROMPT, 2))
    with pytest.raises(jaxport.errors.GenerationError, match="logit_bias"):
        generator.generate(PROMPT, 2, logit_bias={99: 1.0})
