"""Caches as the model libraries build them (issue 62): index leaves beside the keys and values, saved with the
documented ``cache_axes=(0, 1)`` and no rule; a wrong rule refused naming the leaf; ``save_bundle``'s overwrite."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import jaxport
from jaxport.application.cli.main import main
from jaxport.application.generation.schedulers import scheduler_for, scheduling_of
from jaxport.domain.generation.scheduling import GenerationRequest, stream_tokens
from jaxport.domain.targets.registry import TARGETS
from jaxport.errors import GenerationSpecError
from tests.helpers import index_cache_model as model


@pytest.fixture(scope="module", params=[True, False], ids=["per-row end_index", "shared cache_index"])
def saved(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[bool, Path]:
    per_row: bool = request.param
    root = tmp_path_factory.mktemp("index")
    path = model.save(root / "model", per_row)
    jaxport.to_onnx(path, root / "onnx")
    return per_row, root


@pytest.mark.parametrize("where", ["model", "onnx"])
def test_the_index_leaves_are_recognised_and_inspect_shows_them(saved: tuple[bool, Path], where: str,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    per_row, root = saved
    spec = jaxport.load_generator(root / where).spec
    axes = {leaf.name: (leaf.batch_axis, leaf.sequence_axis) for leaf in spec.cache}
    index = "end_index" if per_row else "cache_index"
    assert axes == {**{f"layer_{n}/{k}": (0, 1) for n in range(2) for k in ("k", "v", "tok")},
                    **{f"layer_{n}/{index}": ((0, None) if per_row else (None, None)) for n in range(2)}}
    assert main(["inspect", str(root / where)]) == 0
    shown = [line.split() for line in capsys.readouterr().out.splitlines() if line.strip().startswith("layer_") and f"/{index}" in line]
    assert shown == [[f"layer_{n}/{index}", f"int32[{'b' if per_row else ''}]",
                      *("batch axis 0".split() if per_row else "shared by the batch".split())] for n in range(2)]


@pytest.mark.parametrize("where", ["model", "onnx"])
def test_tokens_equal_a_jit_loop_of_the_step(saved: tuple[bool, Path], where: str) -> None:
    per_row, root = saved
    generator = jaxport.load_generator(root / where)
    expected = model.reference(per_row, [1, 2, 3], 8)
    assert generator.generate([1, 2, 3], 8) == expected
    assert generator.generate([[1, 2, 3], [4, 5, 6]], 6) == [expected[:6], model.reference(per_row, [4, 5, 6], 6)]
    # a per-row index: a request can take a row of its own; a shared one: one request at a time
    assert scheduling_of(generator, 4).continuous is per_row


@pytest.mark.parametrize("where", ["model", "onnx"])
def test_requests_of_different_lengths_served_together_each_get_their_own_tokens(saved: tuple[bool, Path],
                                                                                 where: str) -> None:
    per_row, root = saved
    scheduler = scheduler_for(jaxport.load_generator(root / where), 4, 8)
    assert scheduler.continuous is per_row  # rows copied into slots with their own index, or one at a time
    prompts = [(1, 2, 3), (4, 5), (7,), (9, 8, 7, 6), (3, 3), (2,)]
    try:
        streams = [scheduler.submit(GenerationRequest(p, 7)) for p in prompts]
        results = [stream_tokens(stream, 60.0) for stream in streams]
    finally:
        scheduler.close(60.0)
    assert [tokens for tokens, _ in results] == [model.reference(per_row, list(p), 7) for p in prompts]


@pytest.mark.parametrize("target", ["savedmodel", "litert", "iree"])
def test_the_other_runtimes_generate_with_the_index_leaves(saved: tuple[bool, Path], target: str) -> None:
    missing = [m for m in TARGETS[target].loads if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"{missing[0]} is not installed (pip install 'jaxport[{TARGETS[target].extra}]')")
    per_row, root = saved
    dims = None if target == "savedmodel" else {"prefill": [{"b": 2, "s": 3}], "decode": [{"b": 2}]}
    jaxport.convert(root / "model", root / target, to=target, dims=dims, overwrite=True)
    prompts = [[1, 2, 3], [4, 5, 6]]
    assert jaxport.load_generator(root / target).generate(prompts, 6) == [model.reference(per_row, p, 6)
                                                                          for p in prompts]


def test_a_wrong_rule_is_refused_naming_the_leaf_and_nothing_is_written(tmp_path: Path) -> None:
    with pytest.raises(GenerationSpecError, match=r"fit cache\['layer_0'\]\['end_index'\]: no rule of cache_axes "
                                                  r"matches the leaf 'layer_0/end_index'"):
        model.save(tmp_path / "a", True, cache_axes={"*/k": (0, 1), "*/v": (0, 1), "*/tok": (0, 1)})
    with pytest.raises(GenerationSpecError, match=r"fit cache_axes\['\*/end_idx'\]: the rule applies to no leaf"):
        model.save(tmp_path / "b", True, cache_axes={"*/end_idx": (0, None), "*": (0, 1)})
    assert list(tmp_path.iterdir()) == []
    model.save(tmp_path / "c", True, cache_axes={"*/end_index": (0, None), "*": (0, 1)})
    assert jaxport.load_generator(tmp_path / "c").generate([1, 2, 3], 4) == model.reference(True, [1, 2, 3], 4)


def test_overwrite_replaces_what_is_there_and_without_it_only_a_bundle_is(tmp_path: Path) -> None:
    target = tmp_path / "model"
    target.mkdir()
    (target / "notes.txt").write_text("mine")
    with pytest.raises(GenerationSpecError, match=r"cache\['layer_0'\]\['end_index'\]"):  # checked first
        model.save(target, True, overwrite=True, cache_axes={"*/k": (0, 1)})
    with pytest.raises(FileExistsError, match="not a bundle directory .*pass overwrite=True"):
        model.save(target, True)
    assert [p.name for p in target.iterdir()] == ["notes.txt"]
    model.save(target, True, overwrite=True)
    assert not (target / "notes.txt").exists()
    assert jaxport.load_generator(target).generate([1, 2, 3], 4) == model.reference(True, [1, 2, 3], 4)
    model.save(target, False)  # a previous bundle is replaced, as before
    assert jaxport.load_generator(target).generate([1, 2, 3], 4) == model.reference(False, [1, 2, 3], 4)
    afile = tmp_path / "file"
    afile.write_text("x")
    model.save(afile, False, overwrite=True)
    assert afile.is_dir() and sorted(p.name for p in tmp_path.iterdir()) == ["file", "model"]
