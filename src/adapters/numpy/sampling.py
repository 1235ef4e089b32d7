"""Picking the next token on the host with NumPy: greedy, temperature, top-k, top-p, from a seed; offsets
(penalties, logit bias) added first; a picked token's logprobs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from jaxport.domain.generation.penalties import TokenLogprob
from jaxport.domain.generation.ports import SamplingOptions
from jaxport.domain.ports import HostArray


class NumpySampler:
    """A :class:`~jaxport.domain.generation.ports.Sampler` whose draws follow from one seed.

    >>> sampler = NumpySampler(0)
    >>> sampler.pick(np.array([[0.0, 3.0, 1.0]]), SamplingOptions())
    [1]
    >>> sampler.pick(np.array([[0.0, 3.0, 1.0]]), SamplingOptions(), [{1: -100.0}])
    [2]
    """

    def __init__(self, seed: int | None) -> None:
        self._rng = np.random.default_rng(seed)

    def pick(self, logits: HostArray, options: SamplingOptions,
             offsets: Sequence[Mapping[int, float]] = ()) -> Sequence[int]:
        """One token per row of ``logits``: the largest at temperature 0, else a draw; each row's ``offsets``
        added first."""
        if offsets:
            x = np.array(logits, dtype=np.float64)
            for row, offset in enumerate(offsets):
                if offset:
                    ids = np.fromiter(offset.keys(), dtype=np.int64, count=len(offset))
                    x[row, ids] += np.fromiter(offset.values(), dtype=np.float64, count=len(offset))
            logits = x
        if options.temperature == 0:
            # On the logits' own dtype: widening to float64 keeps their order (and so the pick), and at
            # 8 rows of 8,192 it cost 0.1 ms a token, 6x the argmax.
            return [int(i) for i in np.argmax(np.asarray(logits), axis=-1)]
        x = np.asarray(logits, dtype=np.float64)
        x = x / options.temperature
        if options.top_k is not None and options.top_k < x.shape[-1]:
            kth = np.partition(x, -options.top_k, axis=-1)[:, -options.top_k, None]
            x = np.where(x < kth, -np.inf, x)
        x = x - np.max(x, axis=-1, keepdims=True)
        p = np.exp(x)
        p /= p.sum(axis=-1, keepdims=True)
        if options.top_p < 1:
            order = np.argsort(-p, axis=-1, kind="stable")
            ranked = np.take_along_axis(p, order, axis=-1)
            # Keep the fewest largest whose sum reaches top_p: a token stays while the sum before it is short.
            keep_ranked = np.cumsum(ranked, axis=-1) - ranked < options.top_p
            keep = np.zeros_like(keep_ranked)
            np.put_along_axis(keep, order, keep_ranked, axis=-1)
            p = np.where(keep, p, 0.0)
            p /= p.sum(axis=-1, keepdims=True)
        cumulative = np.cumsum(p, axis=-1)
        picked = [int(np.searchsorted(row, self._rng.random(), side="right")) for row in cumulative]
        return [min(i, p.shape[-1] - 1) for i in picked]

    def pick_row(self, logits: HostArray, row: int, options: SamplingOptions,
                 offsets: Mapping[int, float] | None = None) -> int:
        """The token of row ``row`` of ``logits`` alone (one draw, as a one-row batch takes)."""
        return self.pick(np.asarray(logits)[row:row + 1], options, [offsets] if offsets else ())[0]

    def logprob(self, logits: HostArray, row: int, token: int, top: int) -> TokenLogprob:
        """``token``'s log-probability in row ``row`` (the log-softmax of the logits, in float64) and the
        ``top`` most likely tokens' (ties: the lower id first).

        >>> NumpySampler(0).logprob(np.log(np.array([[0.25, 0.5, 0.25]])), 0, 2, 1)
        TokenLogprob(token=2, logprob=-1.386..., top=((1, -0.693...),))
        """
        x = np.asarray(logits, dtype=np.float64)[row]
        shifted = x - np.max(x)
        logp = shifted - np.log(np.sum(np.exp(shifted)))
        best: tuple[tuple[int, float], ...] = ()
        if top:
            order = np.argsort(-logp, kind="stable")[:top]
            best = tuple((int(i), float(logp[i])) for i in order)
        return TokenLogprob(token, float(logp[token]), best)
