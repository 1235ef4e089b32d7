"""A bundled ``tokenizer.json`` read with Hugging Face's ``tokenizers`` (the ``jaxport[text]`` extra)."""

from __future__ import annotations

from collections.abc import Sequence

from jaxport.domain.errors import GenerationSpecError, MissingExtraError

try:
    from tokenizers import Tokenizer
except ImportError as exc:  # the extra is not installed
    raise MissingExtraError("Hugging Face's tokenizers", "text", exc) from exc


class HuggingFaceTokenizer:
    """Text to token ids and back with a ``tokenizers.Tokenizer`` (a :class:`~jaxport.application.generation.generator.TextCodec`)."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self._tokenizer = tokenizer

    @staticmethod
    def from_bytes(blob: bytes, where: str) -> HuggingFaceTokenizer:
        """The tokenizer that the ``tokenizer.json`` bytes ``blob`` describe.

        Raises:
            GenerationSpecError: naming ``where``, when ``tokenizers`` cannot read it.
        """
        try:
            return HuggingFaceTokenizer(Tokenizer.from_str(blob.decode("utf-8")))
        except Exception as exc:  # tokenizers raises its own Exception subclasses
            raise GenerationSpecError(f"the tokenizer {where}", f"tokenizers cannot read it: {exc}") from exc

    def encode(self, text: str) -> list[int]:
        """The ids of ``text`` (with the special tokens its post-processor adds)."""
        return list(self._tokenizer.encode(text).ids)

    def decode(self, ids: Sequence[int]) -> str:
        """The text of ``ids``, special tokens left out."""
        return str(self._tokenizer.decode(list(ids), skip_special_tokens=True))
