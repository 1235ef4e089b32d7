"""The loop of generation: a prefill over the prompts, then one decode per token, over the ports.

Prompts of one batch that differ in length are padded so that one call runs
them all: on the left where the model takes a mask (the pad slots masked out,
each row's positions counting its own tokens only), on the right where it
takes per-row positions and no mask (each row's logits read at its own last
token, the pad slots written past the row's end and overwritten before any
later step reads them). A model that takes neither runs prompts of one length.

A row ends at an end-of-text or stop token (not emitted) or after
``max_new_tokens``; the loop ends when every row has.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import Enum

from jaxport.domain.errors import GenerationError
from jaxport.domain.generation.penalties import TokenLogprob, check_adjustments
from jaxport.domain.generation.ports import Sampler, SamplingOptions, StepBatch, StepRunner
from jaxport.domain.generation.spec import CacheLeaf, GenerationSpec, StepInput


class Padding(Enum):
    """Where the shorter prompts of a batch are padded."""

    NONE = "none"
    LEFT = "left"
    RIGHT = "right"


@dataclass(frozen=True, slots=True)
class Layout:
    """How a batch's prompts are laid out for the prefill: where they are padded, and to what length."""

    padding: Padding
    length: int


def check_request(spec: GenerationSpec, prompts: Sequence[Sequence[int]], max_new_tokens: int,
                  options: SamplingOptions, stop: Sequence[int], lengths: Sequence[int] | None = None,
                  batches: Sequence[int] | None = None) -> Layout:
    """Checks a call of ``generate``; returns how its prompts are laid out.

    Token ids are taken as :func:`operator.index` takes them (Python's and NumPy's integers).

    Args:
        lengths: the prompt lengths the prefill was compiled for at this batch size (None: any; empty:
            this batch size was not compiled); the prompts are padded to the shortest that holds the
            longest of them.
        batches: the batch sizes the prefill was compiled for (named where ``lengths`` is empty).

    Raises:
        GenerationError: naming the argument: an empty prompt or batch, a token or a stop id
            that is not an integer or is outside the vocabulary, ``max_new_tokens`` < 1, a prompt
            longer than the cache or one whose new tokens overflow it (naming the most that fit),
            a temperature below 0, ``top_k`` < 1, ``top_p`` outside (0, 1], a penalty, bias or ``logprobs``
            out of bounds (:func:`~jaxport.domain.generation.penalties.check_adjustments`), prompts of different
            lengths for a model that takes neither a mask nor positions; a batch size that was not
            compiled (naming those that were), a prompt that no compiled length holds, or that must
            be padded for a model that cannot be (naming the lengths there are).
    """
    assert spec.vocab_size is not None and spec.max_length is not None
    if not prompts:
        raise GenerationError("prompt", "the batch holds no prompt: give at least one")
    for row, prompt in enumerate(prompts):
        where = "prompt" if len(prompts) == 1 else f"prompt[{row}]"
        if not prompt:
            raise GenerationError(where, "the prompt is empty: give at least one token")
        _check_ids(where, prompt, spec.vocab_size)
    _check_ids("stop", stop, spec.vocab_size)
    _check_options(options, spec.vocab_size)
    if lengths is not None and not lengths:
        compiled = sorted(batches or ())
        raise GenerationError("prompt", f"a batch of {len(prompts)} prompts: the prefill was compiled for "
                                        f"batches of {compiled} prompts only: give {_sizes(compiled)} prompts "
                                        "at a time, or convert with that batch size among the dims")
    longest = max(len(p) for p in prompts)
    if longest > spec.max_length:
        raise GenerationError("prompt", f"a prompt of {longest} tokens does not fit the cache of "
                                        f"{spec.max_length} tokens (the prompt and the new tokens): shorten it "
                                        f"to at most {spec.max_length} tokens")
    length = longest if lengths is None else next((n for n in sorted(lengths) if n >= longest), None)
    if length is None:
        raise GenerationError("prompt", f"a prompt of {longest} tokens is longer than every prompt length the "
                                        f"prefill was compiled for: {sorted(lengths or ())}")
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise GenerationError("max_new_tokens", f"{max_new_tokens!r} is not a count of at least 1")
    if length + max_new_tokens - 1 > spec.max_length:
        padded = "" if length == longest else f" (padded to the compiled length {length})"
        raise GenerationError("max_new_tokens", f"a prompt of {longest} tokens{padded} and {max_new_tokens} "
                                                f"new ones need {length + max_new_tokens - 1} cache slots; the "
                                                f"cache holds {spec.max_length}: ask for at most "
                                                f"{max(spec.max_length - length + 1, 0)} new tokens, or give "
                                                "a shorter prompt")
    return Layout(_padding(spec, [len(p) for p in prompts], length, lengths), length)


def room(spec: GenerationSpec, prompt: int, lengths: Sequence[int] | None = None) -> int:
    """The most new tokens that a prompt of ``prompt`` tokens leaves room for in the cache, where it is
    padded to the shortest of ``lengths`` that holds it (None: not padded); at least 1 (a prompt that no
    length holds, or that fills the cache, is for :func:`check_request` to refuse).

    >>> room(GenerationSpec(max_length=16), 5), room(GenerationSpec(max_length=16), 5, (4, 8))
    (12, 9)
    """
    assert spec.max_length is not None
    length = prompt if lengths is None else next((n for n in sorted(lengths) if n >= prompt), prompt)
    return max(1, spec.max_length - length + 1)


def _sizes(sizes: Sequence[int]) -> str:
    return " or ".join(str(n) for n in sizes) if sizes else "no batch of"


def _check_ids(where: str, ids: Sequence[int], vocab: int) -> None:
    for i, token in enumerate(ids):
        try:
            value = operator.index(token) if not isinstance(token, bool) else None
        except TypeError:
            value = None
        if value is None:
            raise GenerationError(f"{where}[{i}]", f"{token!r} is not an integer: a token id is an int "
                                                   "(or a NumPy integer)")
        if not 0 <= value < vocab:
            raise GenerationError(f"{where}[{i}]", f"{value} is outside the vocabulary [0, {vocab})")


def _check_options(options: SamplingOptions, vocab: int) -> None:
    t = options.temperature
    if not isinstance(t, (int, float)) or not math.isfinite(t) or t < 0:
        raise GenerationError("temperature", f"{t!r} is not a finite number >= 0 (0 is greedy)")
    k = options.top_k
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise GenerationError("top_k", f"{k!r} is not a count of at least 1 (None: every token)")
    p = options.top_p
    if not isinstance(p, (int, float)) or not 0 < p <= 1:
        raise GenerationError("top_p", f"{p!r} is not in (0, 1]")
    if options.seed is not None and (isinstance(options.seed, bool) or not isinstance(options.seed, int)):
        raise GenerationError("seed", f"{options.seed!r} is not an int")
    check_adjustments(options.frequency_penalty, options.presence_penalty, options.logit_bias, options.logprobs,
                      vocab)


def _padding(spec: GenerationSpec, sizes: Sequence[int], length: int, lengths: Sequence[int] | None) -> Padding:
    if set(sizes) == {length}:
        return Padding.NONE
    both = [inputs for _, inputs in spec.steps]
    if all(StepInput.MASK in inputs for inputs in both):
        return Padding.LEFT
    if per_row(spec, leaves=[leaf for leaf in spec.cache if leaf.sequence_axis is not None]):
        return Padding.RIGHT
    if lengths is not None:
        raise GenerationError("prompt", f"prompts of {sorted(set(sizes))} tokens must be padded to a length the "
                                        f"prefill was compiled for, {sorted(lengths)}, and this model takes no "
                                        "mask and no per-row positions: give prompts of one of those lengths")
    raise GenerationError("prompt", f"the prompts have different lengths {list(sizes)}; this "
                                    "model takes no mask and no per-row positions, so a batch needs prompts "
                                    "of one length")


def per_row(spec: GenerationSpec, leaves: Sequence[CacheLeaf] | None = None) -> bool:
    """Whether each row runs at its own positions: both steps take positions and every leaf of
    ``leaves`` (None: the whole cache) has a batch axis. Then rows can be padded on the right,
    and a request can join a running decode batch in a row of its own."""
    kept = spec.cache if leaves is None else leaves
    return (all(StepInput.POSITIONS in inputs for _, inputs in spec.steps)
            and all(leaf.batch_axis is not None for leaf in kept))


@dataclass(frozen=True, slots=True)
class Rows:
    """The batch's layout: each row's prompt length, the padded length, the padding."""

    lengths: tuple[int, ...]
    padded: int
    padding: Padding
    max_length: int
    #: Whether a step takes the mask: without, no step's batch carries one (``mask`` is empty), as
    #: building a row of ``max_length`` ints per row and step was most of the loop's own time.
    masked: bool = True

    def offset(self, row: int) -> int:
        """The slots of padding before the row's first token."""
        return self.padded - self.lengths[row] if self.padding is Padding.LEFT else 0

    def mask(self, row: int, end: int) -> tuple[int, ...]:
        """The row's mask when slots ``[0, end)`` are written.

        >>> Rows((2,), 3, Padding.LEFT, 6).mask(0, 4)
        (0, 1, 1, 1, 0, 0)
        """
        start = self.offset(row)
        return (0,) * start + (1,) * (end - start) + (0,) * (self.max_length - end)

    def masks(self, rows: int, end: int) -> tuple[tuple[int, ...], ...]:
        """Each row's mask when slots ``[0, end)`` are written; none when no step takes a mask."""
        return tuple(self.mask(row, end) for row in range(rows)) if self.masked else ()


def prefill_batch(prompts: Sequence[Sequence[int]], rows: Rows, pad: int) -> StepBatch:
    """The prefill's inputs: the prompts padded, their positions, the mask, each row's last token."""
    tokens, positions = [], []
    for row, prompt in enumerate(prompts):
        fill = (pad,) * (rows.padded - len(prompt))
        if rows.padding is Padding.LEFT:
            tokens.append(fill + tuple(prompt))
            positions.append((0,) * len(fill) + tuple(range(len(prompt))))
        else:
            tokens.append(tuple(prompt) + fill)
            positions.append(tuple(range(rows.padded)))
    last = tuple(n - 1 if rows.padding is Padding.RIGHT else rows.padded - 1 for n in rows.lengths)
    return StepBatch(tuple(tokens), tuple(positions), rows.masks(len(prompts), rows.padded), last)


def decode_batch(tokens: Sequence[int], step: int, rows: Rows) -> StepBatch:
    """The inputs of decode step ``step`` (from 0): one token per row, at the slot after the last."""
    count = len(tokens)
    positions = tuple((rows.lengths[row] + step,) for row in range(count))
    return StepBatch(tuple((t,) for t in tokens), positions, rows.masks(count, rows.padded + step + 1), (0,) * count)


def run(spec: GenerationSpec, runner: StepRunner, sampler: Sampler, prompts: Sequence[Sequence[int]],
        max_new_tokens: int, options: SamplingOptions, stop: Sequence[int], layout: Layout
        ) -> Iterator[tuple[int, int, TokenLogprob | None]]:
    """Generates, yielding ``(row, token, logprob)`` as each token comes (a checked request, see
    :func:`check_request`); ``logprob`` None unless ``options.logprobs`` asks for it."""
    assert spec.max_length is not None
    masked = any(StepInput.MASK in inputs for _, inputs in spec.steps)
    rows = Rows(tuple(len(p) for p in prompts), layout.length, layout.padding, spec.max_length, masked)
    ends = set(spec.eos_ids) | set(stop)
    runner.start(len(prompts))
    logits = runner.step(spec.prefill, prefill_batch(prompts, rows, spec.pad_id))
    live = [True] * len(prompts)
    counts: list[dict[int, int]] = [{} for _ in prompts]
    for step in range(max_new_tokens):
        # Without adjustments the sampler is called as before them: a sampler of one's own need not take offsets.
        picked = list(sampler.pick(logits, options, [options.offsets(c) for c in counts]) if options.adjusted
                      else sampler.pick(logits, options))
        for row, token in enumerate(picked):
            if not live[row]:
                picked[row] = spec.pad_id
            elif token in ends:
                live[row], picked[row] = False, spec.pad_id
            else:
                counts[row][token] = counts[row].get(token, 0) + 1
                yield row, token, None if options.logprobs is None else \
                    sampler.logprob(logits, row, token, options.logprobs)
        if not any(live) or step == max_new_tokens - 1:
            return
        logits = runner.step(spec.decode, decode_batch(picked, step, rows))
