"""``jaxport serve`` opens a converted directory once: its manifest parsed once, each file's digest checked once,
each model file loaded once per driver it runs on.

The server's own loading calls (:func:`jaxport.application.serving.service.served_loads`) run here, in the
test's process, so that what they do can be counted: the manifests parsed, the digests checked (the domain's
checks, each called with the digest found, whether it was hashed now or known from an earlier check), the ONNX
Runtime sessions alive (the garbage collector's list of objects) and the IREE runtimes made, after a v2 call,
the golden examples and a generation ran.
"""

from __future__ import annotations

import collections
import gc
import importlib.util
from pathlib import Path
from typing import Any

import jax.numpy as jnp
import numpy as np
import pytest

import jaxport
from jaxport.adapters.storage import checked_directory, opened_directory
from jaxport.application.conversion.api import open_directory
from jaxport.application.serving.service import served_loads
from jaxport.domain import checked_directory as checked
from jaxport.domain.bundle import checks
from jaxport.domain.converted.manifest import ConvertedManifest
from jaxport.domain.serving.generative import GenerativeModel
from jaxport.domain.serving.options import ServeOptions
from tests.helpers import gpt_model as gpt

pytest.importorskip("tokenizers", reason="the bundled tokenizer needs the jaxport[text] extra")


class Reads:
    """What loading did, counted: manifests parsed, and per file how often its digest was checked."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.manifests = 0
        self.digests: collections.Counter[str] = collections.Counter()
        parse = ConvertedManifest.from_json

        def parsed(data: bytes) -> ConvertedManifest:
            self.manifests += 1
            return parse(data)

        monkeypatch.setattr(ConvertedManifest, "from_json", staticmethod(parsed))
        for module in (checked_directory, opened_directory):  # each file's digest, by its name
            monkeypatch.setattr(module, "check_digest", self._counted(checked.check_digest, lambda a: a[0]))
        weights = checks.check_weights_digests  # the weights file: its header's and each weight's
        monkeypatch.setattr(opened_directory, "check_weights_digests", self._counted(weights, lambda a: "weights"))

    def _counted(self, check: Any, name: Any) -> Any:
        def counted(*args: Any) -> Any:
            self.digests[name(args)] += 1
            return check(*args)

        return counted


def _save(root: Path) -> Path:
    """The positions model with a tokenizer and a golden example of its prefill, saved as a bundle."""
    cache = {k: jnp.zeros(s.shape, s.dtype) for k, s in gpt.empty_cache(1, shared_index=False).items()}
    prompt = jnp.asarray([[1, 2, 3, 4]], jnp.int32)
    tokenizer = str(gpt.tiny_tokenizer(root / "tokenizer.json"))
    jaxport.save_bundle(root / "gpt", gpt.export_steps(False), gpt.make_params(),
                        generation=gpt.spec(False, tokenizer=tokenizer),
                        examples={"prefill": [((prompt, jnp.arange(4, dtype=jnp.int32)[None], cache), {})]})
    return root / "gpt"


def _served(path: Path, prompt: list[int], new: int) -> tuple[Any, list[int], GenerativeModel]:
    """What a server of ``path`` loads: its functions (the golden example runs), a v2 call of the prefill
    on ``prompt``, and its generative model's tokens after ``prompt``."""
    load, generative = served_loads(open_directory(path), ServeOptions(max_slots=2, max_queue=2))
    assert generative is not None
    functions = {f.name: f for f in load()}
    model = generative()
    empty = [np.zeros(s.shape, s.dtype) for _, s in sorted(gpt.empty_cache(1, shared_index=False).items())]
    leaves = [np.asarray([prompt], np.int32), np.arange(len(prompt), dtype=np.int32)[None], *empty]
    logits = functions["prefill"].run(leaves)[0]  # a v2 call
    stream = model.scheduler.submit(model.prepare("the cat", new, temperature=0.0, top_p=1.0, seed=None,
                                                  stop=None).request)
    text_ids = model.codec.encode("the cat") if model.codec is not None else []
    tokens = [event.token for event in (stream.next(120.0) for _ in range(new + 1)) if event.token is not None]
    assert tokens == gpt.reference(False, list(text_ids), new)
    return logits, tokens, model


def _each_file_checked_once(reads: Reads, path: Path) -> None:
    files = ConvertedManifest.from_json((path / "manifest.json").read_bytes()).files
    assert reads.manifests == 1 + 1  # the server's one parse, and the line above
    assert dict(reads.digests) == {**{name: 1 for name in files if name != "params.safetensors"}, "weights": 1}


def test_an_onnx_directory_served_is_read_once_and_opens_each_model_file_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ort = pytest.importorskip("onnxruntime", reason="serving an ONNX directory needs the jaxport[onnx] extra")
    monkeypatch.setenv("JAXPORT_CACHE_DIR", str(tmp_path / "cache"))
    jaxport.to_onnx(_save(tmp_path), tmp_path / "onnx")
    files = sorted(p.name for p in (tmp_path / "onnx").glob("*.onnx"))
    assert files == ["decode.onnx", "prefill.onnx"]

    def sessions() -> int:
        gc.collect()
        return sum(isinstance(o, ort.InferenceSession) for o in gc.get_objects())

    before = sessions()
    reads = Reads(monkeypatch)
    logits, tokens, model = _served(tmp_path / "onnx", [4, 5], 4)
    try:
        assert logits.shape == (1, 2, gpt.VOCAB)
        assert sessions() - before == len(files)  # the functions, the golden example and the steps share them
        _each_file_checked_once(reads, tmp_path / "onnx")
    finally:
        model.scheduler.close(0.0)


def test_an_iree_directory_served_loads_each_module_once_per_driver_from_one_opened_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if importlib.util.find_spec("iree.runtime") is None or importlib.util.find_spec("iree.compiler") is None:
        pytest.skip("converting and serving an IREE directory needs the jaxport[iree] extra")
    from jaxport.adapters.iree import runtime as iree

    monkeypatch.setenv("JAXPORT_CACHE_DIR", str(tmp_path / "cache"))
    dims = {"prefill": [{"b": 1, "s": 4}], "decode": [{"b": 1}]}
    jaxport.to_iree(_save(tmp_path), tmp_path / "iree", dims=dims)
    reads = Reads(monkeypatch)
    loads: collections.Counter[tuple[str, str]] = collections.Counter()
    load = iree.load

    def counted(root: str, manifest: ConvertedManifest, options: Any) -> Any:
        for file in sorted({v.file for f in manifest.functions for v in f.variants}):
            loads[str(options.get("driver", iree.DRIVERS[0])), file] += 1
        return load(root, manifest, options)

    monkeypatch.setattr(iree, "load", counted)
    _, _, model = _served(tmp_path / "iree", [4, 5, 6, 7], 3)
    try:
        modules = sorted(p.name for p in (tmp_path / "iree").glob("*.vmfb"))
        # Its v2 calls on IREE's task pool; its generation on the calling thread: two loads of one opened directory.
        assert dict(loads) == {(driver, file): 1 for driver in ("local-task", "local-sync") for file in modules}
        _each_file_checked_once(reads, tmp_path / "iree")
    finally:
        model.scheduler.close(0.0)
