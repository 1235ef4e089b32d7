"""ONNX Runtime GenAI runs the ONNX directory of a generative bundle that fits its conventions.

GenAI's own ``Model`` and ``Generator`` (its public Python API) read the
directory's ``genai_config.json`` and ``genai_decoder.onnx``; their greedy
tokens equal ``jaxport.load_generator``'s on the same directory, and a plain
``jax.jit`` loop's. A model that does not fit gets no config, and its
manifest says why.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

import jaxport
from jaxport.application.cli.main import main
from jaxport.errors import ArtifactError
from tests.helpers import genai_model, gpt_model

og = pytest.importorskip("onnxruntime_genai", reason="pip install 'jaxport[genai]'")


@pytest.fixture(scope="module")
def onnx_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("genai")
    jaxport.to_onnx(genai_model.save(root / "model"), root / "onnx")
    return root / "onnx"


def genai_greedy(path: Path, prompts: list[list[int]], max_new_tokens: int) -> list[list[int]]:
    """GenAI's greedy tokens after each prompt (prompts of one length), with its own generator loop."""
    model = og.Model(str(path))
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=len(prompts[0]) + max_new_tokens, batch_size=len(prompts))
    generator = og.Generator(model, params)
    generator.append_tokens(np.asarray(prompts, np.int32))
    while not generator.is_done():
        generator.generate_next_token()
    return [[int(t) for t in generator.get_sequence(row)[len(prompts[0]):]] for row in range(len(prompts))]


@pytest.mark.parametrize("prompts, new", [([[1, 2, 3]], 8), ([[1, 2, 3], [4, 5, 6]], 6), ([[9, 8, 7, 6]], 12)],
                         ids=["one", "batch", "whole-cache"])
def test_genai_greedy_tokens_equal_generate_and_a_plain_jit_loop(onnx_dir: Path, prompts: list[list[int]],
                                                                 new: int) -> None:
    ours = jaxport.load_generator(onnx_dir).generate(prompts, new)
    assert ours == [genai_model.reference(p, new) for p in prompts]
    assert genai_greedy(onnx_dir, prompts, new) == ours


def test_genai_files_are_listed_and_digested_and_read_the_directorys_weights(onnx_dir: Path,
                                                                              capsys: pytest.CaptureFixture[str]
                                                                              ) -> None:
    manifest = json.loads((onnx_dir / "manifest.json").read_text())
    assert manifest["target_details"]["onnxruntime_genai"] == {"config": "genai_config.json",
                                                               "model": "genai_decoder.onnx"}
    files = manifest["files"]
    for name in ("genai_config.json", "genai_decoder.onnx"):
        digest = files[name]["sha256"] if isinstance(files[name], dict) else files[name]
        assert hashlib.sha256((onnx_dir / name).read_bytes()).hexdigest() in json.dumps(digest)
    config = json.loads((onnx_dir / "genai_config.json").read_text())
    decoder = config["model"]["decoder"]
    assert (decoder["num_hidden_layers"], decoder["num_attention_heads"], decoder["head_size"]) == \
        (genai_model.LAYERS, genai_model.HEADS, genai_model.HEAD_SIZE)
    assert config["search"]["past_present_share_buffer"] is True
    assert config["model"]["eos_token_id"] == [genai_model.EOS]
    # The weights stay in params.safetensors: GenAI's model is no bigger than the prefill's own.
    assert (onnx_dir / "genai_decoder.onnx").stat().st_size < 2 * (onnx_dir / "prefill.onnx").stat().st_size
    assert main(["inspect", str(onnx_dir)]) == 0
    assert "ONNX Runtime GenAI runs it (genai_config.json)" in capsys.readouterr().out


def test_a_changed_genai_config_is_refused_by_the_loader(onnx_dir: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "onnx"
    shutil.copytree(onnx_dir, copy)
    (copy / "genai_config.json").write_text((copy / "genai_config.json").read_text().replace('"num_beams": 1',
                                                                                             '"num_beams": 4'))
    with pytest.raises(ArtifactError, match="genai_config.json"):
        jaxport.load_generator(copy)


@pytest.mark.parametrize("model, why", [
    ("positions", r"GenAI's decoder takes \(tokens, mask, cache\) for the prefill and the decode alike; this "
                  r"model's prefill takes \(tokens, positions, cache\)"),
    ("fixed mask", r"GenAI gives an attention_mask \(batch, total length\) .* the prefill takes a mask int32\[b,16\]"),
], ids=["positions", "fixed-mask"])
def test_a_model_that_does_not_fit_gets_no_config_and_the_manifest_says_why(model: str, why: str,
                                                                             tmp_path: Path) -> None:
    bundle = gpt_model.save(tmp_path / "model") if model == "positions" else \
        genai_model.save(tmp_path / "model", mask_length=genai_model.MAX_LENGTH)
    jaxport.to_onnx(bundle, tmp_path / "onnx")
    details = json.loads((tmp_path / "onnx" / "manifest.json").read_text())["target_details"]
    assert list(details["onnxruntime_genai"]) == ["unfit"]
    assert __import__("re").search(why, details["onnxruntime_genai"]["unfit"]), details["onnxruntime_genai"]
    assert not (tmp_path / "onnx" / "genai_config.json").exists()
    assert not (tmp_path / "onnx" / "genai_decoder.onnx").exists()
