"""One row's text as its tokens come: :class:`Detokenizer`, with stop texts.

Each token's piece is what decoding every token so far adds to what was said
before. Text that may still change is held back: a character whose first
bytes a token ends on (the tokenizer decodes them to U+FFFD until a later
token completes it, as byte-level BPE does for CJK and emoji), and an end
that begins a stop text. A stop text ends the text where it begins. What is
said is never taken back, so the pieces join to the text of the whole row.
"""

from __future__ import annotations

from collections.abc import Sequence

from jaxport.domain.generation.ports import TextCodec

#: What a tokenizer decodes bytes to while they are not a whole character yet.
INCOMPLETE = "\ufffd"


class Detokenizer:
    """The text of one row, piece by piece (every token so far is decoded at each token).

    Args:
        codec: the tokenizer.
        stops: texts that end the row's text where they begin (not said).

    Attributes:
        stopped: whether a stop text came (the row's text is over).

    >>> class Bytes:
    ...     def encode(self, text: str) -> list[int]: return list(text.encode())
    ...     def decode(self, ids: Sequence[int]) -> str: return bytes(ids).decode(errors="replace")
    >>> row = Detokenizer(Bytes(), stops=["!"])
    >>> [row.add(b) for b in "ok 日!".encode()]
    ['o', 'k', ' ', '', '', '日', '']
    >>> row.stopped, row.rest()
    (True, '')
    """

    def __init__(self, codec: TextCodec, stops: Sequence[str] = ()) -> None:
        self._codec = codec
        self._stops = tuple(stops)
        self._tokens: list[int] = []
        self._text = ""
        self._said = 0
        self.stopped = False

    def add(self, token: int) -> str:
        """The text that ``token`` makes sure of ("": held back); where a stop text begins, the text up to it
        (then :attr:`stopped` is set, and the tokens after add nothing)."""
        if self.stopped:
            return ""
        self._tokens.append(token)
        text = self._text = self._codec.decode(self._tokens)
        found = [i for i in (text.find(s, self._said) for s in self._stops) if i >= 0]
        if found:
            self.stopped = True
            return self._say(min(found))
        partial = max((n for s in self._stops for n in range(1, len(s)) if text.endswith(s[:n])), default=0)
        return self._say(len(text) - max(partial, len(text) - len(text.rstrip(INCOMPLETE))))

    @property
    def holding(self) -> bool:
        """Whether text is held back (a character's first bytes, or the start of a stop text)."""
        return not self.stopped and self._said < len(self._text)

    def rest(self) -> str:
        """The text held back, said at the row's end ("" after a stop text)."""
        return "" if self.stopped else self._say(len(self._text))

    def _say(self, end: int) -> str:
        piece = self._text[self._said:end]
        self._said = max(self._said, end)
        return piece
