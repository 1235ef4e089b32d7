"""A model that generates tokens, on whatever runtime runs its steps: :class:`Generator`.

The loop is the domain's (:mod:`jaxport.domain.generation.loop`); the runtime
(a :class:`~jaxport.domain.generation.ports.StepRunner`), the sampler and the
tokenizer are ports handed in by :func:`jaxport.load_generator`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast, overload

from jaxport.domain.errors import GenerationError
from jaxport.domain.generation.detokenize import Detokenizer
from jaxport.domain.generation.loop import Layout, check_request, run
from jaxport.domain.generation.ports import ChatTemplate, SamplerFactory, SamplingOptions, StepRunner, TextCodec
from jaxport.domain.generation.spec import GenerationSpec

#: A prompt: token ids, or text where a tokenizer is bundled.
Prompt = Sequence[int] | str


@dataclass(frozen=True, slots=True)
class GeneratedToken:
    """One token as :meth:`Generator.stream` yields it.

    Attributes:
        row: the prompt of the batch it continues (0 for a lone prompt).
        id: the token's id.
        text: the text it adds to its row (None without a tokenizer).
    """

    row: int
    id: int
    text: str | None = None


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
                 chat_template: ChatTemplate | None = None) -> None:
        self.spec = spec
        self._runner = runner
        self._sampler = sampler
        self._text = text
        self._chat = chat_template
        #: For a batch size, the prompt lengths the prefill was compiled for (None: any).
        self._lengths = lengths

    @property
    def codec(self) -> TextCodec | None:
        """The bundled tokenizer (None: token ids only)."""
        return self._text

    @overload
    def generate(  # type: ignore[overload-overlap]  # a str is a Sequence[str]: it matches here first
            self, prompt: str, max_new_tokens: int = ..., *, temperature: float = ..., top_k: int | None = ...,
            top_p: float = ..., seed: int | None = ..., stop: Sequence[int] = ...) -> str: ...

    @overload
    def generate(self, prompt: Sequence[int], max_new_tokens: int = ..., *, temperature: float = ...,
                 top_k: int | None = ..., top_p: float = ..., seed: int | None = ...,
                 stop: Sequence[int] = ...) -> list[int]: ...

    @overload
    def generate(self, prompt: Sequence[Sequence[int]] | Sequence[str], max_new_tokens: int = ..., *,
                 temperature: float = ..., top_k: int | None = ..., top_p: float = ..., seed: int | None = ...,
                 stop: Sequence[int] = ...) -> list[list[int]] | list[str]: ...

    def generate(self, prompt: Prompt | Sequence[Prompt], max_new_tokens: int = 16, *, temperature: float = 0.0,
                 top_k: int | None = None, top_p: float = 1.0, seed: int | None = None,
                 stop: Sequence[int] = ()) -> str | list[int] | list[list[int]] | list[str]:
        """The tokens that follow ``prompt``: ids for ids, text for text; a list for a batch.

        Args:
            prompt: token ids, a text (with a bundled tokenizer), or a list of either (a batch;
                prompts of different lengths where the model takes a mask or per-row positions).
            max_new_tokens: the most tokens generated per prompt (at least 1; the prompt and
                these must fit the cache).
            temperature: 0 picks the most likely token (greedy); above 0, tokens are drawn.
            top_k: draw among the ``top_k`` most likely tokens only.
            top_p: draw among the most likely tokens whose probabilities reach ``top_p``.
            seed: the draws' seed: the same seed, the same tokens.
            stop: token ids that end a row, like the model's end-of-text ids (neither is returned).

        Raises:
            GenerationError: naming the argument at fault (see :func:`~jaxport.domain.generation.loop.check_request`).
        """
        rows, texts, batched = self._prompts(prompt)
        out: list[list[int]] = [[] for _ in rows]
        for token in self._run(rows, max_new_tokens, temperature, top_k, top_p, seed, stop):
            out[token.row].append(token.id)
        if texts:
            decoded = [self._codec().decode(ids) for ids in out]
            return decoded if batched else decoded[0]
        return out if batched else out[0]

    def chat(self, messages: Sequence[Mapping[str, Any]], max_new_tokens: int = 16, *, temperature: float = 0.0,
             top_k: int | None = None, top_p: float = 1.0, seed: int | None = None, stop: Sequence[int] = (),
             **template_variables: Any) -> str:
        """The reply to a conversation (``[{"role": "user", "content": "..."}]``), rendered with the
        bundled chat template (with ``add_generation_prompt=True`` and ``template_variables``), then
        generated as :meth:`generate` does with text.

        Raises:
            GenerationError: no chat template or tokenizer is bundled, the template refused the
                messages or failed to render them, or what :meth:`generate` raises.
        """
        return self.generate(self.render_chat(messages, **template_variables), max_new_tokens,
                             temperature=temperature, top_k=top_k, top_p=top_p, seed=seed, stop=stop)

    def render_chat(self, messages: Sequence[Mapping[str, Any]], **template_variables: Any) -> str:
        """The prompt text of a conversation, as the bundled chat template renders it.

        Raises:
            GenerationError: no chat template is bundled, or it refused the messages or failed to render them.
        """
        if self._chat is None:
            raise GenerationError("messages", "this model has no chat template: save it with "
                                              "GenerationSpec(chat_template=...)")
        return self._chat.render(messages, add_generation_prompt=True, **template_variables)

    def stream(self, prompt: Prompt | Sequence[Prompt], max_new_tokens: int = 16, *, temperature: float = 0.0,
               top_k: int | None = None, top_p: float = 1.0, seed: int | None = None,
               stop: Sequence[int] = ()) -> Iterator[GeneratedToken]:
        """Each token as it comes (the arguments of :meth:`generate`); with text prompts, each
        token's text too: what its row's text gained (a character that later tokens complete comes
        whole with the token that completes it; see :class:`~jaxport.domain.generation.detokenize.Detokenizer`)."""
        rows, texts, _ = self._prompts(prompt)
        tokens = self._run(rows, max_new_tokens, temperature, top_k, top_p, seed, stop)
        if not texts:
            yield from tokens
            return
        text = [Detokenizer(self._codec()) for _ in rows]
        for token in tokens:
            yield GeneratedToken(token.row, token.id, text[token.row].add(token.id))

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
        return check_request(self.spec, prompts, max_new_tokens, options, list(stop), lengths)

    def run_checked(self, prompts: Sequence[Sequence[int]], max_new_tokens: int, options: SamplingOptions,
                    stop: Sequence[int], layout: Layout) -> Iterator[GeneratedToken]:
        """Each token of a call that :meth:`check` passed (``layout``: what it gave), as it comes."""
        for row, token in run(self.spec, self._runner, self._sampler(options.seed), prompts, max_new_tokens, options,
                              list(stop), layout):
            yield GeneratedToken(row, token)

    def _run(self, rows: Sequence[Sequence[int]], max_new_tokens: int, temperature: float, top_k: int | None,
             top_p: float, seed: int | None, stop: Sequence[int]) -> Iterator[GeneratedToken]:
        options = SamplingOptions(temperature, top_k, top_p, seed)
        return self.run_checked(rows, max_new_tokens, options, stop, self.check(rows, max_new_tokens, options, stop))

    def _prompts(self, prompt: Prompt | Sequence[Prompt]) -> tuple[list[list[int]], bool, bool]:
        """The prompts as rows of ids, whether they were text, whether they were a batch."""
        if isinstance(prompt, str):
            return [self._encode(prompt, "prompt")], True, False
        items = list(prompt)
        if items and all(isinstance(p, str) for p in items):
            return [self._encode(str(p), f"prompt[{i}]") for i, p in enumerate(items)], True, True
        if items and all(isinstance(p, Sequence) and not isinstance(p, str) for p in items):
            return [list(cast(Sequence[int], p)) for p in items], False, True
        return [cast(list[int], items)], False, False  # ids: the loop checks each one

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
