"""Generating with a generative bundle's conversions: ONNX Runtime (I/O binding), LiteRT and IREE."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import onnxruntime as ort
import pytest

import jaxport
from jaxport.application.cli.main import main
from jaxport.domain.targets.registry import TARGETS
from jaxport.errors import GenerationError
from tests.helpers import gpt_model as gpt

PROMPTS = [[1, 2, 3], [4, 5], [7]]


@pytest.fixture(scope="module", params=[False, True], ids=["positions", "shared-cache"])
def onnx_dir(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[bool, Path]:
    shared: bool = request.param
    root = tmp_path_factory.mktemp("gpt")
    jaxport.to_onnx(gpt.save(root / "model", shared), root / "onnx")
    return shared, root / "onnx"


def test_onnx_greedy_tokens_equal_a_plain_jit_loop_for_a_batch_of_different_lengths(
        onnx_dir: tuple[bool, Path], capsys: pytest.CaptureFixture[str]) -> None:
    shared, path = onnx_dir
    generator = jaxport.load_generator(path)
    assert generator.generate(PROMPTS, 5) == [gpt.reference(shared, p, 5) for p in PROMPTS]
    assert generator.generate([1, 2, 3], 8, stop=[gpt.reference(shared, [1, 2, 3], 8)[3]]) == \
        gpt.reference(shared, [1, 2, 3], 3)
    assert main(["inspect", str(path)]) == 0  # the directory's summary shows the spec it carries
    assert "generation: prefill 'prefill'" in capsys.readouterr().out


def test_onnx_keeps_the_cache_in_two_sets_of_its_own_buffers_between_steps(onnx_dir: tuple[bool, Path]) -> None:
    shared, path = onnx_dir
    generator = jaxport.load_generator(path)
    runner = generator._runner  # the ONNX Runtime runner
    seen: list[tuple[int, ...]] = []
    for token in generator.stream([1, 2, 3], 6, temperature=8.0, seed=3):
        cache = runner.cache  # type: ignore[attr-defined]
        assert all(isinstance(leaf, ort.OrtValue) for leaf in cache)  # never NumPy during the loop
        seen.append(tuple(id(leaf) for leaf in cache))
    assert len(set(seen)) == 2  # the same two buffers, swapped at each step: none allocated
    runs = [generator.generate([1, 2, 3], 8, temperature=8.0, seed=s) for s in (5, 5, 6)]
    assert runs[0] == runs[1] and runs[0] != runs[2]


def test_onnx_generates_without_importing_jax(onnx_dir: tuple[bool, Path]) -> None:
    shared, path = onnx_dir
    if shared:
        pytest.skip("one model shows it")
    _, tokens, loaded = gpt.generate_in_child(path, [[1, 2, 3], [4]], 4)
    assert tokens == [gpt.reference(False, [1, 2, 3], 4), gpt.reference(False, [4], 4)]
    assert loaded == []


@pytest.mark.parametrize("target", ["litert", "iree"])
def test_static_targets_pad_a_prompt_to_a_compiled_length(target: str, tmp_path: Path) -> None:
    missing = [m for m in TARGETS[target].loads if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"{missing[0]} is not installed (pip install 'jaxport[{TARGETS[target].extra}]')")
    dims = {"prefill": [{"b": 1, "s": 4}, {"b": 1, "s": 8}], "decode": [{"b": 1}]}
    jaxport.convert(gpt.save(tmp_path / "model"), tmp_path / target, to=target, dims=dims)
    generator = jaxport.load_generator(tmp_path / target)
    assert generator.generate([1, 2, 3], 6) == gpt.reference(False, [1, 2, 3], 6)
    assert generator.generate([1, 2, 3, 4, 5], 6) == gpt.reference(False, [1, 2, 3, 4, 5], 6)
    with pytest.raises(GenerationError, match=r"a prompt of 9 tokens is longer than every prompt length the "
                                              r"prefill was compiled for: \[4, 8\]"):
        generator.generate(list(range(9)), 2)
    with pytest.raises(GenerationError, match=r"prompt: a batch of 2 prompts: the prefill was compiled for batches "
                                              r"of \[1\] prompts only: give 1 prompts at a time"):
        generator.generate([[1, 2], [3, 4]], 2)


def test_iree_keeps_the_cache_as_its_device_arrays_between_steps(tmp_path: Path) -> None:
    missing = [m for m in TARGETS["iree"].loads if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"{missing[0]} is not installed (pip install 'jaxport[iree]')")
    import iree.runtime as rt

    dims = {"prefill": [{"b": 1, "s": 4}, {"b": 3, "s": 4}], "decode": [{"b": 1}, {"b": 3}]}
    jaxport.convert(gpt.save(tmp_path / "model"), tmp_path / "iree", to="iree", dims=dims)
    generator = jaxport.load_generator(tmp_path / "iree")
    runner = generator._runner  # the runner of the directory's flat calls, IREE's results kept
    steps, copied = 0, 0
    for _ in generator.stream(PROMPTS, 6):
        cache = runner.cache  # type: ignore[attr-defined]
        assert all(isinstance(leaf, rt.DeviceArray) for leaf in cache)
        copied += sum(leaf.is_host_accessible for leaf in cache)  # mapped to the host (NumPy) at any time
        steps += 1
    assert steps == 3 * 6 and copied == 0  # 18 tokens; the cache never went to NumPy
    expected = [gpt.reference(False, p, 6) for p in PROMPTS]
    assert generator.generate(PROMPTS, 6) == expected  # on the calling thread (local-sync), the default here
    assert jaxport.load_generator(tmp_path / "iree", driver="local-task").generate(PROMPTS, 6) == expected
