"""The generative model behind the OpenAI endpoints, on fake ports: requests checked once (by the scheduler) and
named in OpenAI's terms, stop texts."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import pytest

from jaxport.domain.errors import GenerationError
from jaxport.domain.generation.loop import check_request
from jaxport.domain.generation.scheduling import (
    FinishReason, GenerationRequest, RequestStream, SchedulerStats, StreamEvent
)
from jaxport.domain.generation.spec import CacheLeaf, GenerationSpec
from jaxport.domain.serving.generative import GenerativeModel, Piece

VOCAB = 10


class FakeCodec:
    """One character per token: ``a`` is 0, ``b`` is 1, ..."""

    def encode(self, text: str) -> list[int]:
        return [ord(c) - ord("a") for c in text]

    def decode(self, ids: Sequence[int]) -> str:
        return "".join(chr(ord("a") + i) for i in ids)


class FakeStream:
    """The tokens given, then LENGTH; remembers a cancel."""

    def __init__(self, tokens: list[int]) -> None:
        self.tokens, self.cancelled = list(tokens), False

    def next(self, timeout: float) -> StreamEvent:
        if self.cancelled:
            return StreamEvent(None, FinishReason.CANCELLED)
        return StreamEvent(self.tokens.pop(0)) if self.tokens else StreamEvent(None, FinishReason.LENGTH)

    def cancel(self) -> None:
        self.cancelled = True

    def listen(self, wake: Callable[[], None]) -> None:
        wake()  # every event is ready at once


class FakeScheduler:
    """Checks each request as the real ones do (with the prompt lengths compiled), on submit."""

    continuous = False

    def __init__(self, spec: GenerationSpec) -> None:
        self.spec = spec

    def submit(self, request: GenerationRequest) -> RequestStream:
        check_request(self.spec, [request.prompt], request.max_new_tokens, request.options, request.stop, [4, 8])
        return FakeStream([])

    def stats(self) -> SchedulerStats:
        return SchedulerStats(0, 0, 0)

    def close(self, grace: float) -> None:
        pass


def _model(text: bool = True) -> GenerativeModel:
    spec = GenerationSpec(eos_ids=(9,), vocab_size=VOCAB, max_length=8,
                          cache=(CacheLeaf("tok", "int32", ("b", 8), 0, 1),))

    def render(messages: Sequence[Mapping[str, str]]) -> str:
        return "".join(m["content"] for m in messages)

    return GenerativeModel("m", spec, FakeCodec() if text else None, render if text else None, FakeScheduler(spec))


def test_a_request_is_checked_and_runs_to_the_end_of_the_cache_by_default() -> None:
    prepared = _model().prepare("abc", None, temperature=0.0, top_p=1.0, seed=None, stop=[4])
    assert prepared.request == GenerationRequest((0, 1, 2), 6, prepared.request.options, (4, 9))
    assert _model().prepare([1], 2, temperature=0.5, top_p=0.9, seed=3, stop=None).request.options.seed == 3
    model = _model()
    padded = GenerativeModel("m", model.spec, model.codec, None, model.scheduler, room=lambda ids: 8 - 4 + 1)
    assert padded.prepare("abc", None, temperature=0.0, top_p=1.0, seed=None, stop=None).request.max_new_tokens == 5


@pytest.mark.parametrize(("prompt", "max_tokens", "stop", "text", "message"), [
    ("abc", None, None, False, r"prompt: text needs a tokenizer"),
    ([1], None, "c", False, r"stop: text needs a tokenizer"),
    (list(range(9)), None, None, True, r"prompt: 9 tokens are more than the cache holds \(8\)"),
    ([1, 2], 6, None, True, r"max_tokens: a prompt of 2 tokens \(padded to the compiled length 4\) and 6 new ones "
                           r"need 9 cache slots; the cache holds 8: ask for at most 5 new tokens"),
    ([1, 12], None, None, True, r"prompt"),
    ([1], None, [12], True, r"stop"),
    ([1], None, "", True, r"stop: a stop text is empty"),
    ("", None, None, True, r"prompt: the text is empty"),
])
def test_a_bad_request_names_its_field_in_openais_terms(prompt: str | list[int], max_tokens: int | None,
                                                        stop: str | list[int] | None, text: bool,
                                                        message: str) -> None:
    model = _model(text)
    with pytest.raises(GenerationError, match=message):
        model.submit(model.prepare(prompt, max_tokens, temperature=1.0, top_p=1.0, seed=None, stop=stop))


def test_a_stop_text_across_tokens_ends_the_text_where_it_begins_and_cancels_the_stream() -> None:
    model = _model()
    prepared = model.prepare("a", 6, temperature=0.0, top_p=1.0, seed=None, stop=["dc", "zz"])
    stream = FakeStream([1, 2, 3, 2, 1])  # "bcdcb"
    pieces = list(model.pieces(prepared, stream, 0.1))
    assert pieces == [Piece(1, "b"), Piece(2, "c"), Piece(3, ""), Piece(2, ""), Piece(None, finish="stop")]
    assert stream.cancelled
    held = list(model.pieces(prepared, FakeStream([3, 3]), 0.1))  # "dd": held back, then not a stop
    assert held == [Piece(3, ""), Piece(3, "d"), Piece(None, "d", finish="length")]


def test_without_a_tokenizer_pieces_carry_ids_and_the_reason_it_ended() -> None:
    model = _model(text=False)
    prepared = model.prepare([1], 2, temperature=0.0, top_p=1.0, seed=None, stop=None)
    assert list(model.pieces(prepared, FakeStream([5, 6]), 0.1)) == [Piece(5), Piece(6), Piece(None, finish="length")]
    with pytest.raises(GenerationError, match="messages: the model 'm' has no chat template"):
        model.render_chat([{"role": "user", "content": "x"}])


class FakeByteCodec(FakeCodec):
    """One token per UTF-8 byte, as byte-level BPE writes CJK and emoji."""

    def decode(self, ids: Sequence[int]) -> str:
        return bytes(ids).decode(errors="replace")


def test_a_character_that_spans_tokens_comes_whole_with_the_token_that_completes_it() -> None:
    spec = GenerationSpec(vocab_size=256, max_length=8, cache=(CacheLeaf("tok", "int32", ("b", 8), 0, 1),))
    model = GenerativeModel("m", spec, FakeByteCodec(), None, FakeScheduler(spec))
    prepared = model.prepare([1], 4, temperature=0.0, top_p=1.0, seed=None, stop=None)
    pieces = list(model.pieces(prepared, FakeStream(list("日".encode()) + [0xe6]), 0.1))
    assert pieces == [Piece(0xe6), Piece(0x97), Piece(0xa5, "日"), Piece(0xe6), Piece(None, "\ufffd", finish="length")]
