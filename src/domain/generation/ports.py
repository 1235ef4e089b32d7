"""The ports of generation: a runtime that runs the steps, a sampler that picks tokens.

The loop (:mod:`jaxport.domain.generation.loop`) speaks plain ints to both:
the runner turns each step's tokens, positions and mask into its runtime's
arrays, keeps the cache in the runtime's own buffers between steps and hands
back only the logits of one token per row; the sampler picks each row's next
token from them, on the host.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from jaxport.domain.generation.penalties import TokenLogprob, offsets
from jaxport.domain.ports import HostArray


@dataclass(frozen=True, slots=True)
class StepBatch:
    """The inputs of one step, as ints.

    Attributes:
        tokens: one row of tokens per prompt (the decode: one token each).
        positions: each token's place in its row (the shape of ``tokens``).
        mask: per row, one entry per cache slot: 1 where the slot holds a token
            of the row (the current ones included), 0 for padding and free slots;
            empty when neither step takes a mask.
        last: per row, the index in ``tokens`` of the token whose logits come back.
    """

    tokens: tuple[tuple[int, ...], ...]
    positions: tuple[tuple[int, ...], ...]
    mask: tuple[tuple[int, ...], ...]
    last: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class SamplingOptions:
    """How the next token is picked from the logits (checked by :func:`~.loop.check_request`).

    Attributes:
        temperature: 0 picks the largest logit (greedy); above 0, the logits
            are divided by it and a token is drawn.
        top_k: draw among the ``top_k`` largest logits only (None: all).
        top_p: draw among the fewest largest logits whose probabilities sum to
            at least ``top_p`` (1: all).
        seed: the seed of the draws (None: a fresh one each run).
        presence_penalty: subtracted from the logit of each token that came in the row so far (OpenAI's).
        frequency_penalty: subtracted from each token's logit once per time it came in the row so far.
        logit_bias: token id to a bias in [-100, 100] added to its logit at every step.
        logprobs: None: no logprobs; else each picked token's logprob and this many most likely
            alternatives (:class:`~jaxport.domain.generation.penalties.TokenLogprob`).
    """

    temperature: float = 0.0
    top_k: int | None = None
    top_p: float = 1.0
    seed: int | None = None
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    logit_bias: Mapping[int, float] = field(default_factory=dict)
    logprobs: int | None = None

    @property
    def adjusted(self) -> bool:
        """Whether the logits are adjusted before the pick (a penalty or a bias)."""
        return bool(self.presence_penalty or self.frequency_penalty or self.logit_bias)

    def offsets(self, counts: Mapping[int, int]) -> dict[int, float]:
        """What to add to a row's logits, given how often each token came in it so far
        (:func:`~jaxport.domain.generation.penalties.offsets`)."""
        return offsets(self.frequency_penalty, self.presence_penalty, self.logit_bias, counts)


class StepRunner(Protocol):
    """Runs a generative model's prefill and decode on one runtime, holding the cache."""

    def start(self, batch: int) -> None:
        """Makes an empty cache for ``batch`` rows (dropping any previous one)."""

    def step(self, function: str, batch: StepBatch) -> HostArray:
        """Runs ``function`` (the prefill's or the decode's name) on ``batch`` and the cache held,
        keeps the cache it returns, and gives the float logits of ``batch.last``: ``(rows, vocab)``."""


@runtime_checkable
class SlotRunner(StepRunner, Protocol):
    """A runner whose cache rows are slots: requests join a running decode batch between steps.

    For a model whose decode takes per-row positions and whose cache leaves all
    have a batch axis (:func:`~jaxport.domain.generation.loop.per_row`; each leaf's
    :func:`~jaxport.domain.generation.slots.slot_axes`): each row of the cache that
    :meth:`start` made is one request's, at its own positions. The
    :class:`~jaxport.domain.generation.slots.SlotTable` drives it.
    """

    @property
    def prefills_together(self) -> bool:
        """Whether :meth:`prefill_slots` takes more than one row: the prefill runs on any batch."""

    def prefill_slots(self, slots: Sequence[int], function: str, batch: StepBatch) -> HostArray:
        """Runs ``function`` (the prefill) on ``batch`` (one row per slot, prompts of one length) over an
        empty cache of that many rows, copies row ``i`` of that cache into row ``slots[i]`` of the cache held
        (the other rows untouched), and gives the float logits of ``batch.last``: ``(len(slots), vocab)``.
        More than one row only where :attr:`prefills_together`."""

    def step_first(self, function: str, batch: StepBatch) -> HostArray:
        """:meth:`step` (the decode) over the first ``len(batch.tokens)`` rows of the cache held alone,
        fewer than :meth:`start` made, the step costing what a batch of that many rows costs. The other
        rows are free slots: what they hold after it is the runner's (a request that takes one is prefilled
        into it with :meth:`prefill_slots`)."""


class Sampler(Protocol):
    """Picks each row's next token from its logits."""

    def pick(self, logits: HostArray, options: SamplingOptions,
             offsets: Sequence[Mapping[int, float]] = ()) -> Sequence[int]:
        """One token per row of ``logits`` (``(rows, vocab)``), as ``options`` say, each row's ``offsets``
        (:meth:`SamplingOptions.offsets`; empty: none) added to its logits first."""

    def pick_row(self, logits: HostArray, row: int, options: SamplingOptions,
                 offsets: Mapping[int, float] | None = None) -> int:
        """The token of row ``row`` of ``logits`` alone: what :meth:`pick` gives for that one row."""

    def logprob(self, logits: HostArray, row: int, token: int, top: int) -> TokenLogprob:
        """``token``'s log-probability in row ``row`` of ``logits`` (their log-softmax) and the ``top`` most
        likely tokens'."""


class SamplerFactory(Protocol):
    """Makes the sampler of one run from its seed."""

    def __call__(self, seed: int | None) -> Sampler:
        """A sampler whose draws follow from ``seed`` alone (None: a fresh seed)."""


class TextCodec(Protocol):
    """A tokenizer: text to token ids and back."""

    def encode(self, text: str) -> list[int]:
        """The token ids of ``text``."""

    def decode(self, ids: Sequence[int]) -> str:
        """The text of ``ids``."""


class ChatTemplate(Protocol):
    """A chat template: a conversation to the prompt text the model was trained on."""

    def render(self, messages: Sequence[Mapping[str, Any]], *, add_generation_prompt: bool = True,
               **variables: Any) -> str:
        """The prompt text of ``messages``.

        Raises:
            GenerationError: the template refused the messages or failed to render them.
        """
