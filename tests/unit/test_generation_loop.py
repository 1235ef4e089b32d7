"""The generation spec and loop of the domain, on fake ports (no JAX, no NumPy)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import pytest

from jaxport.domain.errors import GenerationError
from jaxport.domain.generation.loop import Padding, check_request, room, run
from jaxport.domain.generation.penalties import TokenLogprob
from jaxport.domain.generation.ports import SamplingOptions, StepBatch
from jaxport.domain.generation.spec import CacheLeaf, GenerationSpec, StepInput

VOCAB = 10


def _spec(inputs: tuple[StepInput, ...] = (StepInput.TOKENS, StepInput.POSITIONS, StepInput.CACHE),
          shared: bool = False) -> GenerationSpec:
    leaves = (CacheLeaf("tok", "int32", ("b", 8), None if shared else 0, 1),)
    return GenerationSpec(prefill_inputs=inputs, eos_ids=(9,), vocab_size=VOCAB, max_length=8, cache=leaves)


class FakeRunner:
    """A model whose next token is (last token + position + 1) % 9; logits as lists, one-hot."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, StepBatch]] = []

    def start(self, batch: int) -> None:
        self.calls.clear()

    def step(self, function: str, batch: StepBatch) -> list[list[float]]:
        self.calls.append((function, batch))
        rows = []
        for tokens, positions, last in zip(batch.tokens, batch.positions, batch.last):
            pick = (tokens[last] + positions[last] + 1) % 9
            rows.append([1.0 if i == pick else 0.0 for i in range(VOCAB)])
        return rows


class FakeSampler:
    def pick(self, logits: Sequence[Sequence[float]], options: SamplingOptions,
             offsets: Sequence[Mapping[int, float]] = ()) -> list[int]:
        shifted = [[x + (offsets[r].get(i, 0.0) if offsets else 0.0) for i, x in enumerate(row)]
                   for r, row in enumerate(logits)]
        return [max(range(len(row)), key=row.__getitem__) for row in shifted]

    def logprob(self, logits: Sequence[Sequence[float]], row: int, token: int, top: int) -> TokenLogprob:
        return TokenLogprob(token, logits[row][token], tuple((i, logits[row][i]) for i in range(top)))


def _generate(spec: GenerationSpec, prompts: list[list[int]], n: int, stop: Sequence[int] = (),
              lengths: Sequence[int] | None = None) -> tuple[list[list[int]], FakeRunner]:
    runner = FakeRunner()
    layout = check_request(spec, prompts, n, SamplingOptions(), stop, lengths)
    out: list[list[int]] = [[] for _ in prompts]
    for row, token, _ in run(spec, runner, FakeSampler(), prompts, n, SamplingOptions(), stop, layout):  # type: ignore[arg-type]
        out[row].append(token)
    return out, runner


def _alone(prompt: list[int], n: int) -> list[int]:
    out, position = [], len(prompt) - 1
    token = prompt[-1]
    for _ in range(n):
        token = (token + position + 1) % 9
        out.append(token)
        position += 1
    return out


def test_the_spec_reads_back_what_it_wrote() -> None:
    spec = dataclasses.replace(_spec(), decode_inputs=(StepInput.TOKENS, StepInput.CACHE), tokenizer="tokenizer.json",
                               chat_template="{{ messages }}")
    assert GenerationSpec.from_json(spec.to_json(), "generation") == spec


def test_a_batch_of_different_lengths_is_padded_on_the_right_for_per_row_positions() -> None:
    prompts = [[1, 2, 3], [4], [5, 6]]
    out, runner = _generate(_spec(), prompts, 4)
    assert out == [_alone(p, 4) for p in prompts]
    name, prefill = runner.calls[0]
    assert name == "prefill" and prefill.tokens[1] == (4, 0, 0) and prefill.last == (2, 0, 1)
    assert runner.calls[1][1].positions == ((3,), (1,), (2,))
    assert all(batch.mask == () for _, batch in runner.calls)  # no step takes a mask: none is built


def test_a_batch_of_different_lengths_is_padded_on_the_left_for_a_mask() -> None:
    spec = _spec((StepInput.TOKENS, StepInput.POSITIONS, StepInput.MASK, StepInput.CACHE), shared=True)
    prompts = [[1, 2, 3], [4]]
    out, runner = _generate(spec, prompts, 3)
    assert out == [_alone(p, 3) for p in prompts]
    prefill = runner.calls[0][1]
    assert prefill.tokens[1] == (0, 0, 4) and prefill.positions[1] == (0, 0, 0)
    assert prefill.mask[1] == (0, 0, 1, 0, 0, 0, 0, 0)
    assert runner.calls[1][1].mask[1] == (0, 0, 1, 1, 0, 0, 0, 0)


def test_a_model_without_mask_or_per_row_positions_refuses_prompts_of_different_lengths() -> None:
    spec = _spec((StepInput.TOKENS, StepInput.POSITIONS, StepInput.CACHE), shared=True)
    assert check_request(spec, [[1, 2], [3, 4]], 2, SamplingOptions(), ()).padding is Padding.NONE
    with pytest.raises(GenerationError, match=r"different lengths \[2, 1\].*no mask and no per-row positions"):
        check_request(spec, [[1, 2], [3]], 2, SamplingOptions(), ())


def test_prompts_are_padded_to_the_shortest_compiled_length_that_holds_them() -> None:
    prompts = [[1, 2, 3], [4]]
    out, runner = _generate(_spec(), prompts, 3, lengths=[2, 4, 6])
    assert out == [_alone(p, 3) for p in prompts]
    assert runner.calls[0][1].tokens == ((1, 2, 3, 0), (4, 0, 0, 0))
    with pytest.raises(GenerationError, match=r"longer than every prompt length the prefill was compiled for: \[2\]"):
        check_request(_spec(), prompts, 2, SamplingOptions(), (), [2])
    shared = _spec((StepInput.TOKENS, StepInput.POSITIONS, StepInput.CACHE), shared=True)
    with pytest.raises(GenerationError, match=r"prompts of \[3\] tokens must be padded to .* \[4\], and this model"):
        check_request(shared, [[1, 2, 3]], 2, SamplingOptions(), (), [4])


def test_a_stop_token_ends_its_row_only_and_is_not_emitted() -> None:
    first, second = _alone([1, 2, 3], 4), _alone([5], 4)
    stop = first[1]
    out, _ = _generate(_spec(), [[1, 2, 3], [5]], 4, stop=[stop])
    assert out == [first[:1], second[:second.index(stop)] if stop in second else second]


@pytest.mark.parametrize(("prompts", "n", "options", "stop", "match"), [
    ([[]], 2, SamplingOptions(), (), r"prompt: the prompt is empty: give at least one token"),
    ([], 2, SamplingOptions(), (), r"prompt: the batch holds no prompt"),
    ([[1], [2, 10]], 2, SamplingOptions(), (), r"prompt\[1\]\[1\]: 10 is outside the vocabulary \[0, 10\)"),
    ([[1, 2.0]], 2, SamplingOptions(), (), r"prompt\[1\]: 2.0 is not an integer: a token id is an int"),
    ([[1, True]], 2, SamplingOptions(), (), r"prompt\[1\]: True is not an integer"),
    ([[1] * 9], 1, SamplingOptions(), (), r"prompt: a prompt of 9 tokens does not fit the cache of 8 tokens .* "
                                          r"at most 8 tokens"),
    ([[1]], 0, SamplingOptions(), (), r"max_new_tokens: 0 is not a count of at least 1"),
    ([[1, 2]], 8, SamplingOptions(), (), r"max_new_tokens: .* need 9 cache slots; the cache holds 8: ask for at "
                                         r"most 7 new tokens, or give a shorter prompt"),
    ([[1]], 2, SamplingOptions(), (-1,), r"stop\[0\]: -1 is outside the vocabulary"),
    ([[1]], 2, SamplingOptions(temperature=-0.5), (), r"temperature: -0.5 is not a finite number >= 0"),
    ([[1]], 2, SamplingOptions(top_k=0), (), r"top_k: 0 is not a count of at least 1"),
    ([[1]], 2, SamplingOptions(top_p=0.0), (), r"top_p: 0.0 is not in \(0, 1\]"),
    ([[1]], 2, SamplingOptions(top_p=1.5), (), r"top_p: 1.5 is not in \(0, 1\]"),
])
def test_a_bad_request_is_a_generation_error_naming_the_argument(
        prompts: list[list[int]], n: int, options: SamplingOptions, stop: tuple[int, ...], match: str) -> None:
    with pytest.raises(GenerationError, match=match):
        check_request(_spec(), prompts, n, options, stop)


def test_ids_are_taken_as_operator_index_takes_them() -> None:
    class Index:  # an integer type of another library (NumPy's, say)
        def __init__(self, value: int) -> None:
            self.value = value

        def __index__(self) -> int:
            return self.value

    ids: list[int] = [Index(1), Index(2)]  # type: ignore[list-item]
    assert check_request(_spec(), [ids], 2, SamplingOptions(), [Index(3)]).length == 2  # type: ignore[list-item]
    with pytest.raises(GenerationError, match=r"prompt\[0\]: 10 is outside the vocabulary"):
        check_request(_spec(), [[Index(10)]], 2, SamplingOptions(), ())  # type: ignore[list-item]


def test_a_batch_size_that_was_not_compiled_names_those_that_were() -> None:
    with pytest.raises(GenerationError, match=r"prompt: a batch of 3 prompts: the prefill was compiled for batches "
                                              r"of \[1, 2\] prompts only: give 1 or 2 prompts at a time"):
        check_request(_spec(), [[1], [2], [3]], 2, SamplingOptions(), (), lengths=[], batches=[2, 1])


def test_room_is_what_the_cache_holds_after_the_prompt_as_laid_out() -> None:
    assert room(_spec(), 3) == 6 and room(_spec(), 3, [4, 6]) == 5 and room(_spec(), 8) == 1
