"""One row's text as its tokens come (``Detokenizer``), on a fake tokenizer whose tokens are bytes: characters
that span tokens come whole, stop texts end the text where they begin, and the pieces join to the whole text."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from jaxport.domain.generation.detokenize import Detokenizer


class FakeByteCodec:
    """A byte-level tokenizer: one token per UTF-8 byte, so CJK, emoji and combining marks span tokens
    (its decode gives U+FFFD for a character's first bytes, as byte-level BPE tokenizers do)."""

    def encode(self, text: str) -> list[int]:
        return list(text.encode())

    def decode(self, ids: Sequence[int]) -> str:
        return bytes(ids).decode(errors="replace")


TEXT = "ok 日本 😀 nai\u0308ve €5 한국 ok"


def _pieces(text: str, stops: Sequence[str] = ()) -> tuple[list[str], Detokenizer]:
    row = Detokenizer(FakeByteCodec(), stops)
    return [row.add(token) for token in FakeByteCodec().encode(text)], row


def test_characters_that_span_tokens_come_whole_with_the_token_that_completes_them() -> None:
    pieces, row = _pieces(TEXT)
    assert "".join(pieces) + row.rest() == TEXT
    assert "\ufffd" not in "".join(pieces)
    assert pieces[3:6] == ["", "", "日"] and pieces[10:14] == ["", "", "", "😀"]
    assert not row.stopped and row.rest() == ""


def test_a_stop_text_across_tokens_ends_the_text_where_it_begins() -> None:
    pieces, row = _pieces("ab日本cd", stops=["本c", "zz"])
    assert "".join(pieces) == "ab日" and row.stopped and row.rest() == ""
    assert row.add(ord("x")) == ""  # after the stop: nothing more is said


def test_text_that_may_begin_a_stop_text_is_held_until_it_cannot() -> None:
    pieces, row = _pieces("abzc", stops=["zz"])
    assert pieces == ["a", "b", "", "zc"] and row.rest() == ""
    pieces, row = _pieces("abz", stops=["zz"])
    assert pieces == ["a", "b", ""] and row.rest() == "z" and not row.stopped


@pytest.mark.parametrize("text", ["日", "\U0001f600", "e\u0301"])
def test_a_row_that_ends_inside_a_character_says_what_its_tokens_decode_to(text: str) -> None:
    codec = FakeByteCodec()
    cut = codec.encode(text)[:-1]
    row = Detokenizer(codec)
    said = "".join(row.add(token) for token in cut) + row.rest()
    assert said == codec.decode(cut)
