"""Generating on LiteRT: one ``.tflite`` whose signatures share the weights, the cache in LiteRT's tensor buffers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("litert_converter", reason="LiteRT's converter is not installed (pip install 'jaxport[litert]')")

from ai_edge_litert.tensor_buffer import TensorBuffer  # noqa: E402

import jaxport  # noqa: E402
from jaxport.errors import GenerationError  # noqa: E402
from jaxport.adapters.litert.generation import LiteRtStepRunner  # noqa: E402
from jaxport.adapters.litert.tflite_file import read_flatbuffer  # noqa: E402
from jaxport.application.cli.main import main  # noqa: E402
from tests.helpers import gpt_model as gpt  # noqa: E402

PROMPTS = [[1, 2, 3], [4, 5], [7]]
DIMS = {"prefill": [{"b": 1, "s": 4}, {"b": 1, "s": 8}, {"b": 3, "s": 4}], "decode": [{"b": 1}, {"b": 3}]}


@pytest.fixture(scope="module", params=[False, True], ids=["positions", "shared-cache"])
def litert_dir(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[bool, Path]:
    shared: bool = request.param
    root = tmp_path_factory.mktemp("gpt")
    jaxport.convert(gpt.save(root / "model", shared), root / "litert", to="litert", dims=DIMS)
    return shared, root / "litert"


def test_one_model_holds_every_variant_as_a_signature(litert_dir: tuple[bool, Path],
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    _, path = litert_dir
    assert sorted(p.name for p in path.glob("*.tflite")) == ["model.tflite"]
    info = read_flatbuffer((path / "model.tflite").read_bytes())
    assert sorted(s.key for s in info.signatures) == ["decode.b=1", "decode.b=3", "prefill.b=1,s=4",
                                                      "prefill.b=1,s=8", "prefill.b=3,s=4"]
    details = json.loads((path / "manifest.json").read_text())["target_details"]["models"]["model.tflite"]
    assert details["signatures"]["prefill.b=3,s=4"] == "prefill" and details["file_bytes"] == \
        (path / "model.tflite").stat().st_size
    assert "graphs of its 5 signature(s)" in details["why"]  # a tiny model: its graphs outweigh its weights
    assert main(["inspect", str(path)]) == 0
    assert "weights float32, one copy shared by the 5 signatures of model.tflite" in capsys.readouterr().out


def test_greedy_tokens_equal_a_plain_jit_loop_for_a_batch_of_different_lengths(
        litert_dir: tuple[bool, Path]) -> None:
    shared, path = litert_dir
    generator = jaxport.load_generator(path)
    assert isinstance(generator._runner, LiteRtStepRunner)
    assert generator.generate(PROMPTS, 5) == [gpt.reference(shared, p, 5) for p in PROMPTS]
    assert generator.generate([1, 2, 3, 4, 5], 6) == gpt.reference(shared, [1, 2, 3, 4, 5], 6)
    assert generator.generate([1, 2, 3], 8, stop=[gpt.reference(shared, [1, 2, 3], 8)[3]]) == \
        gpt.reference(shared, [1, 2, 3], 3)
    checked = jaxport.load_generator(jaxport.load_converted(path))  # the interpreter's signatures, checked calls
    assert not isinstance(checked._runner, LiteRtStepRunner)
    assert checked.generate(PROMPTS, 5) == [gpt.reference(shared, p, 5) for p in PROMPTS]


def test_the_cache_stays_in_two_sets_of_litert_buffers_never_read_to_numpy(
        litert_dir: tuple[bool, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    _, path = litert_dir
    generator = jaxport.load_generator(path)
    runner = generator._runner
    assert isinstance(runner, LiteRtStepRunner)
    read = TensorBuffer.read
    reads: list[int] = []

    def counted(self: TensorBuffer, *args: Any, **kwargs: Any) -> Any:
        reads.append(id(self))
        return read(self, *args, **kwargs)

    monkeypatch.setattr(TensorBuffer, "read", counted)
    seen: list[tuple[int, ...]] = []
    for _ in generator.stream([1, 2, 3], 6, temperature=8.0, seed=3):
        assert runner.cache is not None
        assert all(isinstance(leaf, TensorBuffer) for leaf in runner.cache)
        seen.append(tuple(id(leaf) for leaf in runner.cache))
    cache_ids = {i for ids in seen for i in ids}
    assert len(set(seen)) == 2  # the same two sets, swapped at each step: none allocated
    assert len(reads) == 6 and not cache_ids & set(reads)  # the logits read once a step; the cache never
    runs = [generator.generate([1, 2, 3], 8, temperature=8.0, seed=s) for s in (5, 5, 6)]
    assert runs[0] == runs[1] and runs[0] != runs[2]


def test_litert_generates_without_importing_jax(litert_dir: tuple[bool, Path]) -> None:
    shared, path = litert_dir
    if shared:
        pytest.skip("one model shows it")
    runner, tokens, loaded = gpt.generate_in_child(path, [[1, 2, 3], [4], [5, 6]], 4)
    assert runner == "LiteRtStepRunner"
    assert tokens == [gpt.reference(False, p, 4) for p in ([1, 2, 3], [4], [5, 6])]
    assert loaded == []


def test_the_file_holds_one_copy_of_the_weights(tmp_path: Path) -> None:
    width = 256  # weights of 0.8 MiB: the graphs' bytes are small beside them
    bundle = gpt.save(tmp_path / "model", width=width)
    jaxport.convert(bundle, tmp_path / "litert", to="litert", dims={"prefill": [{"b": 1, "s": 4}, {"b": 1, "s": 8}],
                                                                    "decode": [{"b": 1}]})
    weights = sum(int(a.size) * 4 for a in gpt.make_params(width=width).values())
    size = (tmp_path / "litert" / "model.tflite").stat().st_size
    assert weights <= size <= 1.1 * weights
    details = json.loads((tmp_path / "litert" / "manifest.json").read_text())["target_details"]["models"]
    assert details["model.tflite"]["weights_bytes"] == weights and "why" not in details["model.tflite"]
    generator = jaxport.load_generator(tmp_path / "litert")
    assert generator.generate([1, 2, 3], 5) == gpt.reference(False, [1, 2, 3], 5, width=width)


def test_a_model_with_dynamic_dimensions_shares_its_weights_and_runs_through_the_checked_calls(
        tmp_path: Path) -> None:
    jaxport.convert(gpt.save(tmp_path / "model"), tmp_path / "litert", to="litert")  # no dims: b and s dynamic
    assert sorted(p.name for p in (tmp_path / "litert").glob("*.tflite")) == ["model.tflite"]
    generator = jaxport.load_generator(tmp_path / "litert")
    assert not isinstance(generator._runner, LiteRtStepRunner)  # CompiledModel cannot run resized inputs
    assert generator.generate([[1, 2, 3], [4, 5]], 5) == [gpt.reference(False, p, 5) for p in ([1, 2, 3], [4, 5])]


def test_a_batch_the_decode_was_not_compiled_for_is_a_typed_error(tmp_path: Path) -> None:
    dims = {"prefill": [{"b": 1, "s": 4}, {"b": 2, "s": 4}], "decode": [{"b": 1}]}
    jaxport.convert(gpt.save(tmp_path / "model"), tmp_path / "litert", to="litert", dims=dims)
    generator = jaxport.load_generator(tmp_path / "litert")
    with pytest.raises(GenerationError, match=r"a batch of 2 prompts: the decode was compiled for batches of \[1\]"):
        generator.generate([[1, 2], [3]], 3)
    assert generator.generate([1, 2], 3) == gpt.reference(False, [1, 2], 3)
