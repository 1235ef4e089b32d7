"""A model that generates tokens, on whatever runtime runs its steps: :class:`Generator`.

The loop is the domain's (:mod:`jaxport.domain.generation.loop`); the runtime
(a :class:`~jaxport.domain.generation.ports.StepRunner`), the sampler and the
tokenizer are ports handed in by :func:`jaxport.load_generator`.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, SupportsIndex, overload

from jaxport.domain.errors import GenerationError
from jaxport.domain.generation.detokenize import Detokenizer
from jaxport.domain.generation.loop import Layout, check_request, room, run
from jaxport.domain.generation.penalties import TokenLogprob
from jaxport.domain.generation.ports import ChatTemplate, SamplerFactory, SamplingOptions, StepRunner, TextCodec
from jaxport.domain.generation.spec import GenerationSpec



class IdArray(Protocol):
    """An integer array-like (NumPy's of any integer dtype, JAX's): 1-D for a prompt's token ids, 2-D for a
    batch; read with ``tolist``."""

    def tolist(self) -> Any:
        """The array as (nested) lists of Python ints."""
        ...


#: Token ids: ints or NumPy integers (what :func:`operator.index` takes).
TokenIds = Sequence[SupportsIndex]
#: A prompt: token ids, or text where a tokenizer is bundled.
Prompt = TokenIds | str
#: Stop token ids: a sequence or a 1-D integer array.
StopIds = TokenIds | IdArray


@dataclass(frozen=True, slots=True)
class GeneratedToken:
    """One token as :meth:`Generator.stream` yields it.

    Attributes:
        row: the prompt of the batch it continues (0 for a lone prompt).
        id: the token's id.
        text: the text it adds to its row (None without a tokenizer).
        logprob: its log-probability and the most likely alternatives (where ``logprobs`` asked for them).
    """

    row: int
    id: int
    text: str | None = None
    logprob: TokenLogprob | None = None


class Generator:
    """A generative model ready to generate: ``generate`` and ``stream``.

    Made by :func:`jaxport.load_generator` from a generative bundle (run with
    JAX) or its conversion (run with the target's runtime). Token ids in and
    out, or text in and out when the bundle carries a tokenizer.

    Attributes:
        spec: the model's generation spec.
    """

    def __init__(self, spec: GenerationSpec, runner: StepRunner, sampler: SamplerFactory,
                 text: TextCodec | None = None, lengths: Callable[[int], Sequence[int] | None] | None = None,
                 chat_template: ChatTemplate | None = None,
                 batches: Callable[[], Sequence[int] | None] | None = None) -> None:
        self.spec = spec
        self._runner = runner
        self._sampler = sampler
        self._text = text
        self._chat = chat_template
        #: For a batch size, the prompt lengths the prefill was compiled for (None: any).
        self._lengths = lengths
        #: The batch sizes the prefill was compiled for (None: any).
        self._batches = batches

    @property
    def codec(self) -> TextCodec | None:
        """The bundled tokenizer (None: token ids only)."""
        return self._text

    @overload
    def generate(  # type: ignore[overload-overlap]  # a str is a Sequence[str]: it matches here first
            self, prompt: str, max_new_tokens: int = ..., *, temperature: float = ..., top_k: int | None = ...,
            top_p: float = ..., seed: int | None = ..., presence_penalty: float = ..., frequency_penalty: float = ...,
            logit_bias: Mapping[int, float] | None = ..., logprobs: int | None = ..., stop: StopIds = ...) -> str: ...

    @overload
    def generate(self, prompt: TokenIds, max_new_tokens: int = ..., *, temperature: float = ...,
                 top_k: int | None = ..., top_p: float = ..., seed: int | None = ...,
                 presence_penalty: float = ..., frequency_penalty: float = ...,
                 logit_bias: Mapping[int, float] | None = ..., logprobs: int | None = ...,
                 stop: StopIds = ...) -> list[int]: ...

    @overload
    def generate(self, prompt: Sequence[TokenIds] | Sequence[str] | Sequence[IdArray], max_new_tokens: int = ..., *,
                 temperature: float = ..., top_k: int | None = ..., top_p: float = ..., seed: int | None = ...,
                 presence_penalty: float = ..., frequency_penalty: float = ...,
                 logit_bias: Mapping[int, float] | None = ..., logprobs: int | None = ...,
                 stop: StopIds = ...) -> list[list[int]] | list[str]: ...

    @overload
    def generate(self, prompt: IdArray, max_new_tokens: int = ..., *, temperature: float = ...,
                 top_k: int | None = ..., top_p: float = ..., seed: int | None = ...,
                 presence_penalty: float = ..., frequency_penalty: float = ...,
                 logit_bias: Mapping[int, float] | None = ..., logprobs: int | None = ...,
                 stop: StopIds = ...) -> list[Any]: ...

    def generate(self, prompt: Prompt | Sequence[Prompt] | IdArray | Sequence[IdArray], max_new_tokens: int = 16, *,
                 temperature: float = 0.0, top_k: int | None = None, top_p: float = 1.0, seed: int | None = None,
                 presence_penalty: float = 0.0, frequency_penalty: float = 0.0,
                 logit_bias: Mapping[int, float] | None = None, logprobs: int | None = None,
                 stop: StopIds = ()) -> str | list[int] | list[list[int]] | list[str] | list[Any]:
        """The tokens that follow ``prompt``: ids for ids, text for text; a list for a batch.

        Args:
            prompt: token ids, a text (with a bundled tokenizer), or a list of either (a batch;
                prompts of different lengths where the model takes a mask or per-row positions).
                Token ids are ints or NumPy integers, or an integer array (1-D: a prompt; 2-D: a batch).
            max_new_tokens: the most tokens generated per prompt (at least 1; the prompt and
                these must fit the cache).
            temperature: 0 picks the most likely token (greedy); above 0, tokens are drawn.
            top_k: draw among the ``top_k`` most likely tokens only.
            top_p: draw among the most likely tokens whose probabilities reach ``top_p``.
            seed: the draws' seed: the same seed, the same tokens (of every row: ``n`` choices of one prompt
                are the prompt ``n`` times as a batch, reproducible from one seed).
            presence_penalty: subtracted from the logit of each token its row generated so far (OpenAI's,
                in [-2, 2]).
            frequency_penalty: subtracted from each token's logit once per time its row generated it (in
                [-2, 2]).
            logit_bias: token id to a bias in [-100, 100] added to its logit at every step.
            logprobs: where set (0 to 20), :meth:`stream` gives each token's log-probability and this many
                most likely alternatives (:attr:`GeneratedToken.logprob`); ``generate`` returns the tokens.
            stop: token ids that end a row, like the model's end-of-text ids (neither is returned);
                a list or a 1-D integer array.

        Raises:
            GenerationError: naming the argument at fault (see :func:`~jaxport.domain.generation.loop.check_request`).
        """
        rows, texts, batched = self._prompts(prompt)
        out: list[list[int]] = [[] for _ in rows]
        options = self._options(temperature, top_k, top_p, seed, presence_penalty, frequency_penalty, logit_bias,
                                logprobs)
        for token in self._run(rows, max_new_tokens, options, stop):
            out[token.row].append(token.id)
        if texts:
            decoded = [self._codec().decode(ids) for ids in out]
            return decoded if batched else decoded[0]
        return out if batched else out[0]

    def chat(self, messages: Sequence[Mapping[str, Any]], max_new_tokens: int = 16, *, temperature: float = 0.0,
             top_k: int | None = None, top_p: float = 1.0, seed: int | None = None, presence_penalty: float = 0.0,
             frequency_penalty: float = 0.0, logit_bias: Mapping[int, float] | None = None, stop: StopIds = (),
             **template_variables: Any) -> str:
        """The reply to a conversation (``[{"role": "user", "content": "..."}]``), rendered with the
        bundled chat template (with ``add_generation_prompt=True`` and ``template_variables``), then
        generated as :meth:`generate` does with text.

        Raises:
            GenerationError: no chat template or tokenizer is bundled, the template refused the
                messages or failed to render them, or what :meth:`generate` raises.
        """
        return self.generate(self.render_chat(messages, **template_variables), max_new_tokens,
                             temperature=temperature, top_k=top_k, top_p=top_p, seed=seed,
                             presence_penalty=presence_penalty, frequency_penalty=frequency_penalty,
                             logit_bias=logit_bias, stop=stop)

    def render_chat(self, messages: Sequence[Mapping[str, Any]], **template_variables: Any) -> str:
        """The prompt text of a conversation, as the bundled chat template renders it.

        Raises:
            GenerationError: no chat template is bundled, or it refused the messages or failed to render them.
        """
        if self._chat is None:
            raise GenerationError("messages", "this model has no chat template: save it with "
                                              "GenerationSpec(chat_template=...)")
        return self._chat.render(messages, add_generation_prompt=True, **template_variables)

    def stream(self, prompt: Prompt | Sequence[Prompt] | IdArray | Sequence[IdArray], max_new_tokens: int = 16, *,
               temperature: float = 0.0,
               top_k: int | None = None, top_p: float = 1.0, seed: int | None = None,
               presence_penalty: float = 0.0, frequency_penalty: float = 0.0,
               logit_bias: Mapping[int, float] | None = None, logprobs: int | None = None,
               stop: StopIds = ()) -> Iterator[GeneratedToken]:
        """Each token as it comes (the arguments of :meth:`generate`); with text prompts, each
        token's text too: what its row's text gained (a character that later tokens complete comes
        whole with the token that completes it; see :class:`~jaxport.domain.generation.detokenize.Detokenizer`).

        The texts of a row's tokens join to the text that :meth:`generate` returns for it: a token that ends
        inside a character is yielded when its row's next token comes (which may complete the character),
        or at the row's end with what its bytes decode to (U+FFFD where the character stays incomplete)."""
        rows, texts, _ = self._prompts(prompt)
        options = self._options(temperature, top_k, top_p, seed, presence_penalty, frequency_penalty, logit_bias,
                                logprobs)
        tokens = self._run(rows, max_new_tokens, options, stop)
        if not texts:
            yield from tokens
            return
        text = [Detokenizer(self._codec()) for _ in rows]
        held: dict[int, GeneratedToken] = {}  # per row: its last token, while its text holds bytes back
        for token in tokens:
            before = held.pop(token.row, None)
            if before is not None:
                yield before
            piece = GeneratedToken(token.row, token.id, text[token.row].add(token.id), token.logprob)
            if text[token.row].holding:
                held[token.row] = piece
            else:
                yield piece
        for row in sorted(held):
            yield GeneratedToken(row, held[row].id, (held[row].text or "") + text[row].rest(), held[row].logprob)

    @property
    def runner(self) -> StepRunner:
        """The runtime that runs the steps (a scheduler's worker owns it while the scheduler runs)."""
        return self._runner

    @property
    def samplers(self) -> SamplerFactory:
        """What makes each run's sampler from its seed."""
        return self._sampler

    def check(self, prompts: Sequence[Sequence[int]], max_new_tokens: int, options: SamplingOptions,
              stop: Sequence[int]) -> Layout:
        """Checks a call of :meth:`generate` with ids; how its prompts are laid out.

        Raises:
            GenerationError: naming the argument at fault (see :func:`~jaxport.domain.generation.loop.check_request`).
        """
        lengths = None if self._lengths is None else self._lengths(len(prompts))
        batches = None if self._batches is None or lengths is None or lengths else self._batches()
        return check_request(self.spec, prompts, max_new_tokens, options, list(stop), lengths, batches)

    def room(self, prompt: Sequence[int]) -> int:
        """The most new tokens that the cache leaves room for after ``prompt`` (as laid out: padded to a
        compiled length where the prefill was compiled for some); at least 1."""
        return room(self.spec, len(prompt), None if self._lengths is None else self._lengths(1))

    def run_checked(self, prompts: Sequence[Sequence[int]], max_new_tokens: int, options: SamplingOptions,
                    stop: Sequence[int], layout: Layout) -> Iterator[GeneratedToken]:
        """Each token of a call that :meth:`check` passed (``layout``: what it gave), as it comes."""
        rows = [[operator.index(t) for t in p] for p in prompts]  # checked: NumPy's integers become ints
        ends = [operator.index(t) for t in stop]
        for row, token, logprob in run(self.spec, self._runner, self._sampler(options.seed), rows, max_new_tokens,
                                       options, ends, layout):
            yield GeneratedToken(row, token, None, logprob)

    @staticmethod
    def _options(temperature: float, top_k: int | None, top_p: float, seed: int | None, presence_penalty: float,
                 frequency_penalty: float, logit_bias: Mapping[int, float] | None,
                 logprobs: int | None) -> SamplingOptions:
        bias = _plain(logit_bias) if logit_bias is not None else {}
        if not isinstance(bias, Mapping):
            raise GenerationError("logit_bias", f"{_shown(logit_bias)} is not a mapping of token ids to biases")
        return SamplingOptions(temperature, top_k, top_p, seed, presence_penalty, frequency_penalty, dict(bias),
                               logprobs)

    def _run(self, rows: Sequence[Sequence[int]], max_new_tokens: int, options: SamplingOptions,
             stop: StopIds) -> Iterator[GeneratedToken]:
        ends = _plain(stop)
        if not isinstance(ends, list) or any(isinstance(t, list) for t in ends):
            raise GenerationError("stop", f"{_shown(stop)} is not a list of token ids (nor a 1-D integer array)")
        return self.run_checked(rows, max_new_tokens, options, ends, self.check(rows, max_new_tokens, options, ends))

    def _prompts(self, prompt: Prompt | Sequence[Prompt] | IdArray | Sequence[IdArray]
                 ) -> tuple[list[list[int]], bool, bool]:
        """The prompts as rows of ids, whether they were text, whether they were a batch."""
        if isinstance(prompt, str):
            return [self._encode(prompt, "prompt")], True, False
        items = _plain(prompt)
        if not isinstance(items, list):
            raise GenerationError("prompt", f"{_shown(prompt)} is one value, not a prompt: give token ids (a list "
                                            "or a 1-D integer array), a text, or a batch of either")
        if not items:
            raise GenerationError("prompt", "the list is empty: give a prompt's token ids (at least one), "
                                            "or a batch of at least one prompt")
        if all(isinstance(p, str) for p in items):
            return [self._encode(p, f"prompt[{i}]") for i, p in enumerate(items)], True, True
        if all(isinstance(p, list) for p in items):
            for i, row in enumerate(items):
                if any(isinstance(t, (list, str)) for t in row):
                    raise GenerationError(f"prompt[{i}]", "holds lists or texts: a batch of token ids is 2-D "
                                                          "(a list of lists of ids, or a 2-D integer array)")
            return items, False, True
        if any(isinstance(p, (list, str)) for p in items):
            raise GenerationError("prompt", "mixes token ids, lists and texts: give token ids, a text, or a "
                                            "batch of one kind (lists of ids, or texts)")
        return [items], False, False  # ids: the loop checks each one

    def _codec(self) -> TextCodec:
        if self._text is None:
            raise GenerationError("prompt", "text needs a tokenizer, and this model has none: give token ids, "
                                            "or save the bundle with GenerationSpec(tokenizer=...)")
        return self._text

    def _encode(self, text: str, where: str) -> list[int]:
        ids = self._codec().encode(text)
        if not ids:
            raise GenerationError(where, "the text is empty (it gives no token)")
        return ids

    def __repr__(self) -> str:
        return (f"Generator(prefill={self.spec.prefill!r}, decode={self.spec.decode!r}, "
                f"vocab={self.spec.vocab_size}, max_length={self.spec.max_length})")


def _plain(value: Any) -> Any:
    """``value`` with every array-like (what has ``tolist``: NumPy's and JAX's arrays and scalars) and every
    sequence but a text made a list, at every depth: a prompt's ids, a batch's rows."""
    if isinstance(value, (str, bytes)):
        return value
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        value = tolist()
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return [_plain(v) for v in value]
    return value


def _shown(value: Any) -> str:
    shape = getattr(value, "shape", None)
    return f"an array of shape {tuple(shape)}" if shape is not None else repr(value)
