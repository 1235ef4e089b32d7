"""OpenAI's sampling adjustments in plain Python: penalties, logit bias, and what a token's logprobs hold.

The sampler (a port) adds :func:`offsets` to a row's logits before it picks; the
offsets follow OpenAI's definitions over the tokens the row generated so far:
``logit[j] - count[j] * frequency_penalty - (count[j] > 0) * presence_penalty
+ logit_bias[j]``.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping
from dataclasses import dataclass

from jaxport.domain.errors import GenerationError

#: The most alternatives a token's logprobs list (OpenAI's ``top_logprobs`` bound).
MAX_TOP_LOGPROBS = 20


@dataclass(frozen=True, slots=True)
class TokenLogprob:
    """A picked token's log-probability and the most likely alternatives at its step.

    The log-softmax of the model's own logits at that step (before penalties, bias and temperature).

    Attributes:
        token: the picked token's id.
        logprob: its log-probability.
        top: the ``top`` most likely tokens as ``(id, logprob)``, most likely first (ties: lower id first).
    """

    token: int
    logprob: float
    top: tuple[tuple[int, float], ...] = ()


def offsets(frequency_penalty: float, presence_penalty: float, logit_bias: Mapping[int, float],
            counts: Mapping[int, int]) -> dict[int, float]:
    """What to add to each token's logit (tokens absent: 0), from how often each token came so far.

    >>> offsets(0.5, 1.0, {3: -100.0}, {1: 2, 3: 1})
    {3: -101.5, 1: -2.0}
    """
    out = {token: float(bias) for token, bias in logit_bias.items()}
    if frequency_penalty or presence_penalty:
        for token, count in counts.items():
            if count > 0:
                out[token] = out.get(token, 0.0) - count * frequency_penalty - presence_penalty
    return out


def check_adjustments(frequency_penalty: float, presence_penalty: float, logit_bias: Mapping[int, float],
                      logprobs: int | None, vocab: int) -> None:
    """Checks the adjustments as OpenAI bounds them.

    Raises:
        GenerationError: naming the field: a penalty outside [-2, 2], a ``logit_bias`` key that is not a
            token id of the vocabulary or a bias outside [-100, 100], ``logprobs`` outside
            [0, :data:`MAX_TOP_LOGPROBS`].
    """
    for name, value in (("frequency_penalty", frequency_penalty), ("presence_penalty", presence_penalty)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not -2 <= value <= 2:
            raise GenerationError(name, f"{value!r} is not a number in [-2, 2]")
    for token, bias in logit_bias.items():
        try:
            index = operator.index(token) if not isinstance(token, bool) else None
        except TypeError:
            index = None
        if index is None or not 0 <= index < vocab:
            raise GenerationError("logit_bias", f"the key {token!r} is not a token id of the vocabulary "
                                                f"[0, {vocab})")
        if isinstance(bias, bool) or not isinstance(bias, (int, float)) or not math.isfinite(bias) \
                or not -100 <= bias <= 100:
            raise GenerationError("logit_bias", f"the bias {bias!r} of token {index} is not a number in "
                                                "[-100, 100]")
    if logprobs is not None and (isinstance(logprobs, bool) or not isinstance(logprobs, int)
                                 or not 0 <= logprobs <= MAX_TOP_LOGPROBS):
        raise GenerationError("logprobs", f"{logprobs!r} is not a count in [0, {MAX_TOP_LOGPROBS}] (the "
                                          "alternatives listed with each token)")

