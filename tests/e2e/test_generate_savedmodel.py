"""Generating on a TF SavedModel: its signatures called by TensorFlow, the cache kept in TensorFlow's tensors,
requests joining a running batch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("tensorflow", reason="TensorFlow is not installed (pip install 'jaxport[tf]')")

import tensorflow as tf  # noqa: E402

import jaxport  # noqa: E402
from jaxport.adapters.savedmodel.generation import TfStepRunner  # noqa: E402
from jaxport.application.cli.main import main  # noqa: E402
from jaxport.application.generation.schedulers import scheduler_for  # noqa: E402
from jaxport.domain.generation.ports import SamplingOptions, SlotRunner  # noqa: E402
from jaxport.domain.generation.scheduling import GenerationRequest, stream_tokens  # noqa: E402
from tests.helpers import gpt_model as gpt  # noqa: E402

PROMPTS = [[1, 2, 3], [4, 5], [7]]


@pytest.fixture(scope="module", params=[False, True], ids=["positions", "shared-cache"])
def savedmodel_dir(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[bool, Path]:
    shared: bool = request.param
    root = tmp_path_factory.mktemp("gpt")
    jaxport.convert(gpt.save(root / "model", shared), root / "savedmodel", to="savedmodel")
    return shared, root / "savedmodel"


def test_greedy_tokens_equal_a_plain_jit_loop_for_a_batch_of_different_lengths(
        savedmodel_dir: tuple[bool, Path], capsys: pytest.CaptureFixture[str]) -> None:
    shared, path = savedmodel_dir
    generator = jaxport.load_generator(path)
    assert isinstance(generator._runner, TfStepRunner)
    assert generator.generate(PROMPTS, 5) == [gpt.reference(shared, p, 5) for p in PROMPTS]
    assert generator.generate([1, 2, 3], 8, stop=[gpt.reference(shared, [1, 2, 3], 8)[3]]) == \
        gpt.reference(shared, [1, 2, 3], 3)
    checked = jaxport.load_generator(jaxport.load_converted(path))  # the directory's checked calls
    assert not isinstance(checked._runner, TfStepRunner)
    assert checked.generate(PROMPTS, 5) == [gpt.reference(shared, p, 5) for p in PROMPTS]
    assert main(["inspect", str(path)]) == 0
    assert "generation: prefill 'prefill'" in capsys.readouterr().out


def _numpy_owner() -> type:
    """The class whose ``_numpy`` copies an eager tensor to the host (what ``.numpy()`` and
    ``np.asarray`` call)."""
    return next(c for c in type(tf.constant(0)).__mro__ if "_numpy" in vars(c))


def test_the_cache_stays_in_tensorflow_never_read_to_numpy(savedmodel_dir: tuple[bool, Path],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    _, path = savedmodel_dir
    generator = jaxport.load_generator(path)
    runner = generator._runner
    assert isinstance(runner, TfStepRunner)
    owner = _numpy_owner()
    read = owner._numpy  # type: ignore[attr-defined]
    reads: list[Any] = []

    def counted(self: Any) -> Any:
        reads.append(self)
        return read(self)

    monkeypatch.setattr(owner, "_numpy", counted)
    held: list[Any] = []  # every cache leaf of the loop, kept alive so that no identity is reused
    for _ in generator.stream([1, 2, 3], 6, temperature=8.0, seed=3):
        assert runner.cache and all(isinstance(leaf, tf.Tensor) for leaf in runner.cache)
        held.extend(runner.cache)
    assert len(reads) == 6  # the logits read once a step
    assert not {id(t) for t in held} & {id(t) for t in reads}  # the cache never
    monkeypatch.undo()
    runs = [generator.generate([1, 2, 3], 8, temperature=8.0, seed=s) for s in (5, 5, 6)]
    assert runs[0] == runs[1] and runs[0] != runs[2]


def test_savedmodel_generates_without_importing_jax(savedmodel_dir: tuple[bool, Path]) -> None:
    shared, path = savedmodel_dir
    if shared:
        pytest.skip("one model shows it")
    runner, tokens, loaded = gpt.generate_in_child(path, [[1, 2, 3], [4], [5, 6]], 4)
    assert runner == "TfStepRunner"
    assert tokens == [gpt.reference(False, p, 4) for p in ([1, 2, 3], [4], [5, 6])]
    assert loaded == []


def test_requests_join_a_running_batch_each_with_the_tokens_it_gets_alone(
        savedmodel_dir: tuple[bool, Path]) -> None:
    shared, path = savedmodel_dir
    if shared:
        pytest.skip("a cache whose write index the batch shares runs one request at a time")
    generator = jaxport.load_generator(path)
    assert isinstance(generator._runner, SlotRunner)
    requests = [GenerationRequest((1, 2, 3), 8), GenerationRequest((4, 5), 3, SamplingOptions(8.0, seed=3)),
                GenerationRequest((7,), 6), GenerationRequest((9, 8, 7, 6), 5, SamplingOptions(8.0, 20, 0.95, seed=11))]
    expected = [generator.generate(list(r.prompt), r.max_new_tokens, temperature=r.options.temperature,
                                   top_k=r.options.top_k, top_p=r.options.top_p, seed=r.options.seed)
                for r in requests]
    scheduler = scheduler_for(generator, 2, 4)  # two slots: the later requests join as the first ones end
    try:
        assert scheduler.continuous
        streams = [scheduler.submit(r) for r in requests]
        assert [stream_tokens(s, 60.0)[0] for s in streams] == expected
    finally:
        scheduler.close(0.0)
