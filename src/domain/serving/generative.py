"""A generative model behind a server: requests in the terms of OpenAI's API, run by a scheduler.

:class:`GenerativeModel` is what the HTTP layer (:mod:`jaxport.adapters.kserve.openai_routes`)
talks to: it turns a prompt (text or token ids), ``max_tokens``, the sampling
options and ``stop`` (texts or token ids) into a checked
:class:`~jaxport.domain.generation.scheduling.GenerationRequest`, admits it to
the model's scheduler, and follows its stream as :class:`Piece`\\ s of text that
end where a stop text begins. It imports no web framework and no JAX.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from jaxport.domain.errors import GenerationError
from jaxport.domain.generation.loop import check_request
from jaxport.domain.generation.ports import SamplingOptions, TextCodec
from jaxport.domain.generation.spec import GenerationSpec
from jaxport.domain.generation.scheduling import (
    FinishReason, GenerationRequest, RequestStream, Scheduler, StreamEvent
)

#: The names OpenAI's API gives the arguments that ``generate``'s checks name.
_OPENAI_NAMES = {"max_new_tokens": "max_tokens"}


@dataclass(frozen=True, slots=True)
class Prepared:
    """A checked request and how its tokens become text.

    Attributes:
        request: what the scheduler runs.
        stop_texts: texts that end the completion where they begin (not returned).
        text: whether tokens are decoded to text (a tokenizer is bundled).
    """

    request: GenerationRequest
    stop_texts: tuple[str, ...]
    text: bool


@dataclass(frozen=True, slots=True)
class Piece:
    """One token of a completion, or its end.

    Attributes:
        token: the token's id (None at the end).
        text: the text it adds ("" without a tokenizer, or where it begins a stop text).
        finish: why the completion ended (None before the end): ``"stop"`` or ``"length"``,
            ``"cancelled"`` when the server cancelled it.
    """

    token: int | None
    text: str = ""
    finish: str | None = None


class GenerativeModel:
    """One generative model served by name: requests checked, admitted, followed.

    Args:
        name: the name clients give as ``model``.
        spec: the model's generation spec.
        codec: its tokenizer (None: token ids only).
        render_chat: its chat template, a conversation to prompt text (None: no chat).
        scheduler: what runs the requests (one at a time, or joining between steps).
    """

    def __init__(self, name: str, spec: GenerationSpec, codec: TextCodec | None,
                 render_chat: Callable[[Sequence[Mapping[str, str]]], str] | None, scheduler: Scheduler) -> None:
        self.name = name
        self.spec = spec
        self.codec = codec
        self._render = render_chat
        self.scheduler = scheduler

    @property
    def chat(self) -> bool:
        """Whether chat completions are served (a tokenizer and a chat template are bundled)."""
        return self.codec is not None and self._render is not None

    def render_chat(self, messages: Sequence[Mapping[str, str]]) -> str:
        """The prompt text of a conversation.

        Raises:
            GenerationError: no tokenizer or chat template is bundled, or the template refused the messages.
        """
        if self._render is None or self.codec is None:
            raise GenerationError("messages", f"the model '{self.name}' has no chat template and tokenizer: "
                                              "ask for /completions instead")
        return self._render(messages)

    def prepare(self, prompt: str | Sequence[int], max_tokens: int | None, *, temperature: float, top_p: float,
                seed: int | None, stop: str | Sequence[str] | Sequence[int] | None) -> Prepared:
        """Checks a request as ``generate`` does; ``max_tokens`` None: as many as the cache holds.

        Raises:
            GenerationError: naming the argument in OpenAI's terms (``prompt``, ``max_tokens``, ``stop``,
                ``temperature``, ``top_p``): text without a tokenizer, an empty prompt or one longer
                than the cache, a token outside the vocabulary, too many tokens for the cache.
        """
        spec = self.spec
        assert spec.max_length is not None
        ids = self._ids(prompt, "prompt")
        if len(ids) > spec.max_length:
            raise GenerationError("prompt", f"{len(ids)} tokens are more than the cache holds "
                                            f"({spec.max_length}); it is not truncated")
        stop_ids, stop_texts = self._stops(stop)
        new = spec.max_length - len(ids) + 1 if max_tokens is None else max_tokens
        options = SamplingOptions(temperature=temperature, top_p=top_p, seed=seed)
        try:
            check_request(spec, [ids], new, options, stop_ids)
        except GenerationError as exc:
            raise GenerationError(_OPENAI_NAMES.get(exc.argument, exc.argument),
                                  str(exc).split(": ", 2)[-1]) from exc
        request = GenerationRequest(tuple(ids), new, options, tuple(dict.fromkeys((*stop_ids, *spec.eos_ids))))
        return Prepared(request, stop_texts, self.codec is not None)

    def pieces(self, prepared: Prepared, stream: RequestStream, wait: float) -> Iterator[Piece | None]:
        """The pieces of an admitted request's stream; None where nothing came within ``wait`` seconds
        (so that the caller can look at its client between tokens).

        Text that may begin a stop text is held back until it cannot (the end's piece carries what is
        left); a stop text ends the text where it begins and cancels the stream.
        """
        codec = self.codec if prepared.text else None
        tokens: list[int] = []
        text = said = ""
        while True:
            try:
                event: StreamEvent = stream.next(wait)
            except TimeoutError:
                yield None
                continue
            if event.finish is not None:
                reason = "cancelled" if event.finish is FinishReason.CANCELLED else event.finish.value
                yield Piece(None, text[len(said):], finish=reason)
                return
            assert event.token is not None
            tokens.append(event.token)
            if codec is None:
                yield Piece(event.token)
                continue
            text = codec.decode(tokens)
            cut = _stop_at(text, prepared.stop_texts, len(said))
            if cut is not None:
                stream.cancel()
                yield Piece(event.token, text[len(said):cut])
                yield Piece(None, finish="stop")
                return
            safe = len(text) - _partial_stop(text, prepared.stop_texts)
            piece, said = text[len(said):safe], text[:safe]
            yield Piece(event.token, piece)

    def _ids(self, prompt: str | Sequence[int], where: str) -> list[int]:
        if isinstance(prompt, str):
            ids = self._codec(where).encode(prompt)
            if not ids:
                raise GenerationError(where, "the text is empty (it gives no token)")
            return ids
        return list(prompt)

    def _stops(self, stop: str | Sequence[str] | Sequence[int] | None) -> tuple[list[int], tuple[str, ...]]:
        """Stop token ids and stop texts (texts need the tokenizer: they end the text where they begin)."""
        if stop is None:
            return [], ()
        items = [stop] if isinstance(stop, str) else list(stop)
        texts = tuple(s for s in items if isinstance(s, str))
        if texts:
            self._codec("stop")
            if any(not s for s in texts):
                raise GenerationError("stop", "a stop text is empty")
        return [s for s in items if isinstance(s, int)], texts

    def _codec(self, where: str) -> TextCodec:
        codec = self.codec
        if codec is None:
            raise GenerationError(where, f"text needs a tokenizer, and the model '{self.name}' has none: give "
                                         "token ids, or save its bundle with GenerationSpec(tokenizer=...)")
        return codec


def _stop_at(text: str, stops: Sequence[str], start: int) -> int | None:
    """Where the first stop text begins in ``text`` at or after ``start`` (None: nowhere)."""
    found = [i for i in (text.find(s, start) for s in stops) if i >= 0]
    return min(found) if found else None


def _partial_stop(text: str, stops: Sequence[str]) -> int:
    """The length of the longest end of ``text`` that begins a stop text (0: none)."""
    return max((n for s in stops for n in range(1, len(s)) if text.endswith(s[:n])), default=0)
