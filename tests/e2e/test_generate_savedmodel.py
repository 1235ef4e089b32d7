"""Generating on a TF SavedModel: its signatures called by TensorFlow, the cache kept in TensorFlow's tensors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("tensorflow", reason="TensorFlow is not installed (pip install 'jaxport[tf]')")

import tensorflow as tf  # noqa: E402

import jaxport  # noqa: E402
from jaxport.adapters.savedmodel.generation import TfStepRunner  # noqa: E402
from jaxport.application.cli.main import main  # noqa: E402
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
