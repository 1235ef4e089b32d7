"""The slot table of continuous batching (``SlotTable``) on a fake runner with slots and fake samplers: requests
that join and leave between steps get the tokens of ``generate`` run alone, each in a cache row of its own."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from jaxport.domain.generation.loop import check_request, run
from jaxport.domain.generation.penalties import TokenLogprob
from jaxport.domain.generation.ports import SamplingOptions, StepBatch
from jaxport.domain.generation.scheduling import FinishReason, GenerationRequest, StreamEvent
from jaxport.domain.generation.slots import SlotTable
from jaxport.domain.generation.spec import CacheLeaf, GenerationSpec
from jaxport.domain.ports import HostArray

VOCAB, LENGTH = 10, 16
SPEC = GenerationSpec(eos_ids=(9,), vocab_size=VOCAB, max_length=LENGTH,
                      cache=(CacheLeaf("tok", "int32", ("b", LENGTH), 0, 1),))


@dataclass(frozen=True)
class FakeLogits:
    """Per row, the token the model prefers (what a sampler reads instead of floats)."""

    preferred: tuple[int, ...]

    @property
    def shape(self) -> tuple[int, ...]:
        return (len(self.preferred), VOCAB)

    @property
    def dtype(self) -> object:
        return "float32"


class FakeSlotRunner:
    """A model whose cache row holds the tokens at their positions and whose next token is the sum of the
    row's tokens so far, mod 9 (never the end-of-text 9): a row that reads another's cache gets other tokens."""

    def __init__(self, prefills_together: bool = True) -> None:
        self.prefills_together = prefills_together
        self.cache: list[list[int]] = []
        self.calls: list[str] = []

    def start(self, batch: int) -> None:
        self.cache = [[0] * LENGTH for _ in range(batch)]

    def step(self, function: str, batch: StepBatch) -> HostArray:
        self.calls.append(f"{function}:{len(batch.tokens)}")
        preferred = []
        for row, (tokens, positions, last) in enumerate(zip(batch.tokens, batch.positions, batch.last)):
            for token, position in zip(tokens, positions):
                self.cache[row][position] = token
            preferred.append(sum(self.cache[row][:positions[last] + 1]) % 9)
        return FakeLogits(tuple(preferred))

    def prefill_slots(self, slots: Sequence[int], function: str, batch: StepBatch) -> HostArray:
        held = self.cache
        self.start(len(slots))
        logits = self.step(f"{function}@{','.join(map(str, slots))}", batch)
        for i, slot in enumerate(slots):
            held[slot] = self.cache[i]
        self.cache = held
        return logits

    def step_first(self, function: str, batch: StepBatch) -> HostArray:
        held = self.cache
        self.cache = held[:len(batch.tokens)]  # the rows themselves: written in place
        try:
            return self.step(f"{function}[:{len(batch.tokens)}]", batch)
        finally:
            self.cache = held


class FakeSampler:
    """Picks the preferred token, shifted by the seed: a request that used another's sampler would differ."""

    def __init__(self, seed: int | None) -> None:
        self.shift = seed or 0

    def pick(self, logits: HostArray, options: SamplingOptions,
             offsets: Sequence[Mapping[int, float]] = ()) -> list[int]:
        assert isinstance(logits, FakeLogits)
        return [self.pick_row(logits, row, options, offsets[row] if offsets else None)
                for row in range(len(logits.preferred))]

    def pick_row(self, logits: HostArray, row: int, options: SamplingOptions,
                 offsets: Mapping[int, float] | None = None) -> int:
        """The preferred token (shifted), or the next one where the offsets push the preferred one down."""
        assert isinstance(logits, FakeLogits)
        token = (logits.preferred[row] + self.shift) % 9
        return (token + 1) % 9 if offsets and offsets.get(token, 0.0) < 0 else token

    def logprob(self, logits: HostArray, row: int, token: int, top: int) -> TokenLogprob:
        return TokenLogprob(token, -float(row), ())


def alone(request: GenerationRequest) -> list[int]:
    """The request's tokens as ``generate`` gives them, run alone."""
    runner, prompt = FakeSlotRunner(), [list(request.prompt)]
    layout = check_request(SPEC, prompt, request.max_new_tokens, request.options, request.stop)
    return [token for _, token, _ in run(SPEC, runner, FakeSampler(request.options.seed), prompt,
                                      request.max_new_tokens, request.options, request.stop, layout)]


def _table(slots: int, together: bool = True) -> tuple[SlotTable[str], FakeSlotRunner]:
    runner = FakeSlotRunner(together)
    table: SlotTable[str] = SlotTable(SPEC, runner, FakeSampler, slots)
    table.start()
    return table, runner


def _join(table: SlotTable[str], requests: dict[str, GenerationRequest]) -> list[tuple[str, StreamEvent]]:
    taken = [(name, r, check_request(SPEC, [r.prompt], r.max_new_tokens, r.options, r.stop))
             for name, r in requests.items()]
    return [event for group in table.take(taken) for event in table.prefill(group)]


def _tokens(events: list[tuple[str, StreamEvent]], out: dict[str, list[int | FinishReason]]) -> None:
    for name, event in events:
        got = out.setdefault(name, [])
        got += [] if event.token is None else [event.token]
        got += [] if event.finish is None else [event.finish]


def test_requests_that_join_between_steps_get_their_tokens_alone() -> None:
    first = {"a": GenerationRequest((1, 2, 3), 6), "b": GenerationRequest((4,), 3, SamplingOptions(seed=2))}
    later = {"c": GenerationRequest((5, 6, 7), 4, SamplingOptions(seed=5)), "d": GenerationRequest((2,), 5)}
    table, runner = _table(4)
    out: dict[str, list[int | FinishReason]] = {}
    _tokens(_join(table, first), out)
    for _ in range(2):
        _tokens(table.decode(), out)
    _tokens(_join(table, later), out)
    while table.held():
        _tokens(table.decode(), out)
    for name, request in {**first, **later}.items():
        assert out[name] == [*alone(request), FinishReason.LENGTH], name
    assert runner.calls[:4] == ["prefill@0:1", "prefill@1:1", "decode[:2]:2", "decode[:2]:2"]
    assert runner.calls[4:7] == ["prefill@1:1", "prefill@2:1", "decode:4"]  # b's slot was free again
    assert table.free() == [0, 1, 2, 3]


def test_prompts_of_one_length_prefill_together_where_the_runner_takes_a_batch() -> None:
    requests = {"a": GenerationRequest((1, 2), 3), "b": GenerationRequest((3,), 3), "c": GenerationRequest((4, 5), 3)}
    for together, calls in ((True, ["prefill@0,2:2", "prefill@1:1"]),
                            (False, ["prefill@0:1", "prefill@2:1", "prefill@1:1"])):
        table, runner = _table(3, together)
        out: dict[str, list[int | FinishReason]] = {}
        _tokens(_join(table, requests), out)
        assert runner.calls == calls
        while table.held():
            _tokens(table.decode(), out)
        assert out == {name: [*alone(r), FinishReason.LENGTH] for name, r in requests.items()}


def test_a_stop_token_ends_a_request_and_frees_its_slot() -> None:
    tokens = alone(GenerationRequest((1, 2, 3), 8))
    at = next(i for i, token in enumerate(tokens) if i > 0 and token not in tokens[:i])  # its first time
    table, _ = _table(2)
    out: dict[str, list[int | FinishReason]] = {}
    _tokens(_join(table, {"a": GenerationRequest((1, 2, 3), 8, stop=(tokens[at],))}), out)
    while table.held():
        _tokens(table.decode(), out)
    assert out["a"] == [*tokens[:at], FinishReason.STOP]
    assert table.free() == [0, 1]


def test_a_dropped_request_frees_its_slot_and_start_hands_back_the_others() -> None:
    table, runner = _table(3)
    _join(table, {"a": GenerationRequest((1,), 5), "b": GenerationRequest((2,), 5), "c": GenerationRequest((3,), 5)})
    assert table.drop(1) == "b" and table.free() == [1]
    assert [name for name, _ in table.decode()] == ["a", "c"]
    assert table.start() == ["a", "c"] and table.free() == [0, 1, 2]
    assert runner.cache == [[0] * LENGTH] * 3


def test_penalties_and_logprobs_stay_with_the_request_that_asked_for_them() -> None:
    penalized = GenerationRequest((1,), 6, SamplingOptions(frequency_penalty=1.0, logit_bias={2: -1.0}, logprobs=0))
    plain = GenerationRequest((1,), 6)
    table, _ = _table(2)
    out: dict[str, list[int | FinishReason]] = {}
    logprobs: dict[str, list[TokenLogprob | None]] = {}
    events = _join(table, {"pen": penalized, "plain": plain})
    while True:
        _tokens(events, out)
        for name, event in events:
            if event.token is not None:
                logprobs.setdefault(name, []).append(event.logprob)
        if not table.held():
            break
        events = table.decode()
    assert out["pen"][:-1] == alone(penalized) and out["plain"][:-1] == alone(plain)
    assert alone(penalized) != alone(plain)  # the fake sampler moves off a token pushed down
    assert all(p is not None and p.token == t for p, t in zip(logprobs["pen"], alone(penalized)))
    assert logprobs["plain"] == [None] * 6
