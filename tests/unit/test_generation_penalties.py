"""OpenAI's sampling adjustments in the domain: the offsets' definition, their checks, the loop's bookkeeping."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from jaxport.domain.errors import GenerationError
from jaxport.domain.generation.loop import check_request, run
from jaxport.domain.generation.penalties import TokenLogprob, check_adjustments, offsets
from jaxport.domain.generation.ports import SamplingOptions
from jaxport.domain.generation.ports import StepBatch
from jaxport.domain.generation.spec import CacheLeaf, GenerationSpec

VOCAB = 10
#: Every step's logits: token i at 0.1 * i, the end-of-text token (9) far below.
LOGITS = [0.1 * i for i in range(VOCAB - 1)] + [-10.0]


def _spec() -> GenerationSpec:
    return GenerationSpec(eos_ids=(9,), vocab_size=VOCAB, max_length=8,
                          cache=(CacheLeaf("tok", "int32", ("b", 8), 0, 1),))


class FakeRunner:
    """A model whose logits are :data:`LOGITS` at every step, for every row."""

    def start(self, batch: int) -> None:
        pass

    def step(self, function: str, batch: StepBatch) -> list[list[float]]:
        return [list(LOGITS) for _ in batch.tokens]


def test_offsets_follow_openais_definition() -> None:
    counts = {1: 3, 2: 1, 4: 0}
    got = offsets(0.5, 0.25, {2: 7.0, 5: -100.0}, counts)
    assert got == {1: -3 * 0.5 - 0.25, 2: 7.0 - 0.5 - 0.25, 5: -100.0}
    assert offsets(0.0, 0.0, {}, counts) == {}
    assert SamplingOptions(frequency_penalty=-1.0).offsets({3: 2}) == {3: 2.0}
    assert not SamplingOptions().adjusted and SamplingOptions(logit_bias={1: 0.5}).adjusted


@pytest.mark.parametrize(("kwargs", "argument", "detail"), [
    ({"frequency_penalty": 2.5}, "frequency_penalty", "2.5 is not a number in [-2, 2]"),
    ({"presence_penalty": True}, "presence_penalty", "True is not a number in [-2, 2]"),
    ({"logit_bias": {10: 1.0}}, "logit_bias", "the key 10 is not a token id of the vocabulary [0, 10)"),
    ({"logit_bias": {"1": 1.0}}, "logit_bias", "the key '1' is not a token id"),
    ({"logit_bias": {1: -100.5}}, "logit_bias", "the bias -100.5 of token 1 is not a number in [-100, 100]"),
    ({"logit_bias": {1: float("nan")}}, "logit_bias", "the bias nan of token 1"),
    ({"logprobs": 21}, "logprobs", "21 is not a count in [0, 20]"),
    ({"logprobs": -1}, "logprobs", "-1 is not a count in [0, 20]"),
])
def test_bad_adjustments_are_refused_by_name(kwargs: dict[str, object], argument: str, detail: str) -> None:
    with pytest.raises(GenerationError) as caught:
        check_request(_spec(), [[1]], 2, SamplingOptions(**kwargs), ())  # type: ignore[arg-type]
    assert caught.value.argument == argument and detail in caught.value.detail


def test_check_adjustments_takes_the_bounds_themselves() -> None:
    check_adjustments(2.0, -2.0, {0: -100.0, 9: 100}, 20, 10)
    check_adjustments(0.0, 0.0, {}, None, 10)


class OffsetSampler:
    """Greedy over the logits plus the offsets; logprobs are the raw logits (a fake: only the bookkeeping)."""

    def __init__(self) -> None:
        self.seen: list[list[Mapping[int, float]]] = []

    def pick(self, logits: Sequence[Sequence[float]], options: SamplingOptions,
             offsets: Sequence[Mapping[int, float]] = ()) -> list[int]:
        self.seen.append([dict(o) for o in offsets])
        shifted = [[x + (offsets[r].get(i, 0.0) if offsets else 0.0) for i, x in enumerate(row)]
                   for r, row in enumerate(logits)]
        return [max(range(len(row)), key=row.__getitem__) for row in shifted]

    def logprob(self, logits: Sequence[Sequence[float]], row: int, token: int, top: int) -> TokenLogprob:
        return TokenLogprob(token, logits[row][token], tuple((i, logits[row][i]) for i in range(top)))


def _run(spec: GenerationSpec, prompts: list[list[int]], n: int, options: SamplingOptions
         ) -> tuple[list[list[tuple[int, TokenLogprob | None]]], OffsetSampler]:
    sampler = OffsetSampler()
    layout = check_request(spec, prompts, n, options, ())
    out: list[list[tuple[int, TokenLogprob | None]]] = [[] for _ in prompts]
    for row, token, logprob in run(spec, FakeRunner(), sampler, prompts, n,  # type: ignore[arg-type]
                                   options, (), layout):
        out[row].append((token, logprob))
    return out, sampler


def test_the_loop_counts_each_rows_own_tokens_for_the_penalties() -> None:
    options = SamplingOptions(presence_penalty=0.5, frequency_penalty=0.25, logit_bias={8: -1.0})
    out, sampler = _run(_spec(), [[1], [2, 3]], 4, options)
    assert sampler.seen[0] == [{8: -1.0}, {8: -1.0}]  # nothing came yet: the bias alone
    # 8 is biased down to -0.2: 7 (0.7) first, then 6 (0.6 > 0.7 - 0.75), 5, 4: each token once.
    assert [[t for t, _ in row] for row in out] == [[7, 6, 5, 4]] * 2
    assert sampler.seen[1] == [{8: -1.0, 7: -0.75}] * 2
    assert sampler.seen[3] == [{8: -1.0, 7: -0.75, 6: -0.75, 5: -0.75}] * 2
    assert all(logprob is None for row in out for _, logprob in row)


def test_a_negative_frequency_penalty_repeats_and_a_positive_one_moves_on() -> None:
    repeat, _ = _run(_spec(), [[1]], 4, SamplingOptions(frequency_penalty=-0.5))
    assert [t for t, _ in repeat[0]] == [8, 8, 8, 8]
    moving, _ = _run(_spec(), [[1]], 4, SamplingOptions(frequency_penalty=0.15))
    # 8 at 0.8; then 8 at 0.65 < 7's 0.7: 7; then 8 (0.65) over 7 (0.55) and 6 (0.6); then 6 (0.6) over
    # 7 (0.55) and 8 (0.5).
    assert [t for t, _ in moving[0]] == [8, 7, 8, 6]


def test_the_loop_gives_each_tokens_logprob_where_asked() -> None:
    out, _ = _run(_spec(), [[1]], 3, SamplingOptions(logprobs=2))
    assert all(lp is not None and lp.token == t and lp.logprob == LOGITS[t] and len(lp.top) == 2 for t, lp in out[0])
    unbiased, sampler = _run(_spec(), [[1]], 3, SamplingOptions())
    assert sampler.seen == [[], [], []]  # no adjustment: the sampler is called without offsets
    biased, _ = _run(_spec(), [[1]], 3, SamplingOptions(logit_bias={unbiased[0][0][0]: -5.0}))
    assert biased[0][0][0] != unbiased[0][0][0]
