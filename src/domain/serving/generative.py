"""A generative model behind a server: requests in the terms of OpenAI's API, run by a scheduler.

:class:`GenerativeModel` is what the HTTP layer (:mod:`jaxport.adapters.kserve.openai_routes`)
talks to: it turns a prompt (text or token ids), ``max_tokens``, the sampling
options and ``stop`` (texts or token ids) into a
:class:`~jaxport.domain.generation.scheduling.GenerationRequest`, admits it to
the model's scheduler (which checks it, as ``generate`` does, with the prompt
lengths compiled; the errors named in OpenAI's terms), and follows its stream
as :class:`Piece`\\ s of text (:class:`~jaxport.domain.generation.detokenize.Detokenizer`)
that end where a stop text begins. It imports no web framework and no JAX.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

from jaxport.domain.errors import GenerationError
from jaxport.domain.generation.detokenize import Detokenizer
from jaxport.domain.generation.penalties import TokenLogprob
from jaxport.domain.generation.ports import SamplingOptions, TextCodec
from jaxport.domain.generation.spec import GenerationSpec
from jaxport.domain.generation.scheduling import (
    FinishReason, GenerationRequest, RequestStream, Scheduler, Scheduling, StreamEvent
)

#: The most bytes of prompt text per token of the cache: a longer text is refused before it is tokenized (a
#: text takes 3 to 5 bytes a token; one of more than this many could not fit the cache but in tokens that
#: span runs of 16 bytes and more throughout).
PROMPT_BYTES_PER_TOKEN = 16

#: The names OpenAI's API gives the arguments that ``generate``'s checks name.
_OPENAI_NAMES = {"max_new_tokens": "max_tokens"}


@dataclass(frozen=True, slots=True)
class Prepared:
    """A request in ``generate``'s terms and the texts that end it.

    Attributes:
        request: what the scheduler runs.
        stop_texts: texts that end the completion where they begin (not returned).
    """

    request: GenerationRequest
    stop_texts: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Piece:
    """One token of a completion, or its end.

    Attributes:
        token: the token's id (None at the end).
        text: the text it adds ("" without a tokenizer, or where it begins a stop text).
        finish: why the completion ended (None before the end): ``"stop"`` or ``"length"``,
            ``"cancelled"`` when the server cancelled it.
        logprob: the token's logprobs, where the request asked for them.
    """

    token: int | None
    text: str = ""
    finish: str | None = None
    logprob: TokenLogprob | None = None


class GenerativeModel:
    """One generative model served by name: requests checked, admitted, followed.

    Args:
        name: the name clients give as ``model``.
        spec: the model's generation spec.
        codec: its tokenizer (None: token ids only).
        render_chat: its chat template, a conversation to prompt text (None: no chat).
        scheduler: what runs the requests (one at a time, or joining between steps).
        room: the most new tokens that the cache leaves room for after a prompt's ids, as its prompt is
            laid out (padded to a compiled length): what a request without ``max_tokens`` asks for
            (None: the cache's length less the prompt's).
        scheduling: how ``scheduler`` runs requests, and why (None: not said).
        max_prompt_bytes: the most UTF-8 bytes of a prompt text (a rendered conversation too), checked before
            it is tokenized (None: :data:`PROMPT_BYTES_PER_TOKEN` per token of the cache).
    """

    def __init__(self, name: str, spec: GenerationSpec, codec: TextCodec | None,
                 render_chat: Callable[[Sequence[Mapping[str, str]]], str] | None, scheduler: Scheduler,
                 room: Callable[[Sequence[int]], int] | None = None, scheduling: Scheduling | None = None,
                 max_prompt_bytes: int | None = None) -> None:
        assert spec.max_length is not None
        self.max_prompt_bytes = PROMPT_BYTES_PER_TOKEN * spec.max_length if max_prompt_bytes is None \
            else max_prompt_bytes
        self.name = name
        self.spec = spec
        self.codec = codec
        self._render = render_chat
        self.scheduler = scheduler
        self._room = room
        self.scheduling = scheduling

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
                seed: int | None, stop: str | Sequence[str] | Sequence[int] | None, presence_penalty: float = 0.0,
                frequency_penalty: float = 0.0, logit_bias: Mapping[str, float] | None = None,
                logprobs: int | None = None) -> Prepared:
        """The request in ``generate``'s terms (checked by :meth:`submit`); ``max_tokens`` None: as many as
        the cache holds; ``logit_bias`` keyed by token ids written as text (JSON's keys), ``logprobs`` the
        alternatives listed with each token (None: no logprobs).

        Raises:
            GenerationError: naming the argument in OpenAI's terms (``prompt``, ``stop``, ``logit_bias``): text
                without a tokenizer, an empty text, a text of more than :attr:`max_prompt_bytes` (before it is
                tokenized), a prompt longer than the cache, a ``logit_bias`` key that is not a token id.
        """
        spec = self.spec
        assert spec.max_length is not None
        ids = self._ids(prompt, "prompt")
        if len(ids) > spec.max_length:
            raise GenerationError("prompt", f"{len(ids)} tokens are more than the cache holds "
                                            f"({spec.max_length}); it is not truncated")
        stop_ids, stop_texts = self._stops(stop)
        new = max_tokens if max_tokens is not None else \
            self._room(ids) if self._room is not None else spec.max_length - len(ids) + 1
        options = SamplingOptions(temperature=temperature, top_p=top_p, seed=seed, presence_penalty=presence_penalty,
                                  frequency_penalty=frequency_penalty, logit_bias=_bias(logit_bias),
                                  logprobs=logprobs)
        request = GenerationRequest(tuple(ids), new, options, tuple(dict.fromkeys((*stop_ids, *spec.eos_ids))))
        return Prepared(request, stop_texts)

    @staticmethod
    def choices(prepared: Prepared, n: int) -> list[Prepared]:
        """The ``n`` choices of a request (each a row of the batch): choice ``i`` draws with ``seed + i`` where
        the request has a seed (so each choice is reproducible), else each with a fresh seed.

        >>> request = GenerationRequest((1,), 2, SamplingOptions(seed=7), ())
        >>> [p.request.options.seed for p in GenerativeModel.choices(Prepared(request, ()), 3)]
        [7, 8, 9]
        """
        seed = prepared.request.options.seed
        return [prepared if i == 0 or seed is None else
                Prepared(replace(prepared.request, options=replace(prepared.request.options, seed=seed + i)),
                         prepared.stop_texts) for i in range(n)]

    def submit(self, prepared: Prepared) -> RequestStream:
        """Admits a prepared request to the scheduler, which checks it as ``generate`` does: its stream.

        Raises:
            GenerationError: naming the argument in OpenAI's terms (``prompt``, ``max_tokens``, ``stop``,
                ``temperature``, ``top_p``): a token outside the vocabulary, too many tokens for the
                cache, a prompt that no compiled length holds.
            SchedulerBusyError: the queue is full, or the scheduler is closing.
        """
        try:
            return self.scheduler.submit(prepared.request)
        except GenerationError as exc:
            if exc.argument not in _OPENAI_NAMES:
                raise
            raise GenerationError(_OPENAI_NAMES[exc.argument], exc.detail) from exc

    def pieces(self, prepared: Prepared, stream: RequestStream, wait: float) -> Iterator[Piece | None]:
        """The pieces of an admitted request's stream; None where nothing came within ``wait`` seconds
        (so that the caller can look at its client between tokens).

        Text that may begin a stop text, or a character that later tokens complete, is held back until it
        cannot (the end's piece carries what is left); a stop text ends the text where it begins and
        cancels the stream.
        """
        text = None if self.codec is None else Detokenizer(self.codec, prepared.stop_texts)
        while True:
            try:
                event: StreamEvent = stream.next(wait)
            except TimeoutError:
                yield None
                continue
            if event.finish is not None:
                reason = "cancelled" if event.finish is FinishReason.CANCELLED else event.finish.value
                yield Piece(None, "" if text is None else text.rest(), finish=reason)
                return
            assert event.token is not None
            piece = Piece(event.token, "" if text is None else text.add(event.token), logprob=event.logprob)
            if text is not None and text.stopped:  # the stream is cancelled first: its slot is freed sooner
                stream.cancel()
                yield piece
                yield Piece(None, finish="stop")
                return
            yield piece

    def _ids(self, prompt: str | Sequence[int], where: str) -> list[int]:
        if isinstance(prompt, str):
            size = len(prompt.encode("utf-8", "surrogatepass"))
            if size > self.max_prompt_bytes:
                raise GenerationError(where, f"the text has {size} bytes, more than the {self.max_prompt_bytes} "
                                             f"that the model takes ({PROMPT_BYTES_PER_TOKEN} for each of the "
                                             f"{self.spec.max_length} tokens its cache holds); it is not "
                                             "tokenized")
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


def _bias(logit_bias: Mapping[str, float] | None) -> dict[int, float]:
    """``logit_bias``'s keys as token ids (its biases are checked with the request).

    Raises:
        GenerationError: a key that is not a token id written in decimal digits.
    """
    out: dict[int, float] = {}
    for key, bias in (logit_bias or {}).items():
        if not (key.isascii() and key.isdigit()):
            raise GenerationError("logit_bias", f"the key {key!r} is not a token id (an integer, as a string)")
        out[int(key)] = bias
    return out
