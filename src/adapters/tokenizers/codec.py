"""A bundled ``tokenizer.json`` read with Hugging Face's ``tokenizers`` (the ``jaxport[text]`` extra).

A file over :data:`DEFAULT_MAX_TOKENIZER_BYTES` (``JAXPORT_MAX_TOKENIZER_BYTES`` sets another bound) is refused
before it is parsed: the largest vocabularies' files hold tens of MB.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from jaxport.domain.errors import GenerationError, GenerationSpecError, MissingExtraError

try:
    from tokenizers import Tokenizer
except ImportError as exc:  # the extra is not installed
    raise MissingExtraError("Hugging Face's tokenizers", "text", exc) from exc


#: The largest ``tokenizer.json`` read, in bytes, unless ``JAXPORT_MAX_TOKENIZER_BYTES`` says otherwise.
DEFAULT_MAX_TOKENIZER_BYTES = 128 << 20


def max_tokenizer_bytes() -> int:
    """The bound on a ``tokenizer.json``'s size: ``JAXPORT_MAX_TOKENIZER_BYTES`` (a positive integer), else
    :data:`DEFAULT_MAX_TOKENIZER_BYTES`."""
    said = os.environ.get("JAXPORT_MAX_TOKENIZER_BYTES", "")
    return int(said) if said.isdigit() and int(said) > 0 else DEFAULT_MAX_TOKENIZER_BYTES


class HuggingFaceTokenizer:
    """Text to token ids and back with a ``tokenizers.Tokenizer`` (a :class:`~jaxport.application.generation.generator.TextCodec`)."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self._tokenizer = tokenizer

    @staticmethod
    def from_bytes(blob: bytes, where: str) -> HuggingFaceTokenizer:
        """The tokenizer that the ``tokenizer.json`` bytes ``blob`` describe.

        Raises:
            GenerationSpecError: naming ``where``, when it is larger than :func:`max_tokenizer_bytes` (it is
                not parsed), or ``tokenizers`` cannot read it.
        """
        bound = max_tokenizer_bytes()
        if len(blob) > bound:
            raise GenerationSpecError(f"the tokenizer {where}", f"its {len(blob)} bytes are more than the "
                                                                f"{bound} read (JAXPORT_MAX_TOKENIZER_BYTES); it "
                                                                "is not parsed")
        try:
            tokenizer = HuggingFaceTokenizer(Tokenizer.from_str(blob.decode("utf-8")))
        except Exception as exc:  # tokenizers raises its own Exception subclasses
            raise GenerationSpecError(f"the tokenizer {where}", f"tokenizers cannot read it: {exc}") from exc
        try:  # one that reads but cannot encode (an unknown token missing from its vocabulary): refused here
            tokenizer._tokenizer.decode(tokenizer._tokenizer.encode("hello, world").ids)
        except Exception as exc:  # noqa: BLE001 - tokenizers raises its own Exception subclasses
            raise GenerationSpecError(f"the tokenizer {where}", f"it cannot encode a text: {exc}") from exc
        return tokenizer

    def encode(self, text: str) -> list[int]:
        """The ids of ``text`` (with the special tokens its post-processor adds).

        Raises:
            GenerationError: the tokenizer failed on it (``prompt``).
        """
        try:
            return list(self._tokenizer.encode(text).ids)
        except Exception as exc:  # tokenizers raises its own Exception subclasses
            raise GenerationError("prompt", f"the tokenizer cannot encode it: {exc}") from exc

    def decode(self, ids: Sequence[int]) -> str:
        """The text of ``ids``, special tokens left out.

        Raises:
            GenerationError: the tokenizer failed on them (``tokens``).
        """
        try:
            return str(self._tokenizer.decode(list(ids), skip_special_tokens=True))
        except Exception as exc:  # tokenizers raises its own Exception subclasses
            raise GenerationError("tokens", f"the tokenizer cannot decode them: {exc}") from exc
