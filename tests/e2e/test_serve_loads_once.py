"""``jaxport serve`` loads a converted ONNX directory once: its functions, their golden examples and the
generator's steps run in one ONNX Runtime session per model file.

The server's own loading calls (:func:`jaxport.application.serving.service.served_loads`) run here, in the
test's process, so that the sessions it holds can be counted: every ``onnxruntime.InferenceSession`` alive
(the garbage collector's list of objects), after a v2 call, the golden examples and a generation ran.
"""

from __future__ import annotations

import gc
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

import jaxport
from jaxport.application.serving.service import served_loads
from jaxport.domain.serving.options import ServeOptions
from tests.helpers import gpt_model as gpt

ort = pytest.importorskip("onnxruntime", reason="serving an ONNX directory needs the jaxport[onnx] extra")


def _sessions() -> list[object]:
    gc.collect()
    return [o for o in gc.get_objects() if isinstance(o, ort.InferenceSession)]


def _checked_onnx(root: Path) -> Path:
    """The positions model with a golden example of its prefill, converted to ONNX at ``root / "onnx"``."""
    cache = {k: jnp.zeros(s.shape, s.dtype) for k, s in gpt.empty_cache(1, shared_index=False).items()}
    prompt = jnp.asarray([[1, 2, 3]], jnp.int32)
    jaxport.save_bundle(root / "gpt", gpt.export_steps(False), gpt.make_params(), generation=gpt.spec(False),
                        examples={"prefill": [((prompt, jnp.arange(3, dtype=jnp.int32)[None], cache), {})]})
    jaxport.to_onnx(root / "gpt", root / "onnx")
    return root / "onnx"


def test_an_onnx_directory_served_opens_each_model_file_once(tmp_path: Path) -> None:
    onnx = _checked_onnx(tmp_path)
    files = sorted(p.name for p in onnx.glob("*.onnx"))
    assert len(files) == 2, files  # the prefill's and the decode's
    before = len(_sessions())
    load, generative = served_loads(onnx, ServeOptions(max_slots=2, max_queue=2))
    assert generative is not None
    functions = {f.name: f for f in load()}  # the golden example ran: a prefill session is open
    model = generative()
    try:
        prompt = [4, 5]
        empty = [np.zeros(s.shape, s.dtype) for _, s in sorted(gpt.empty_cache(1, shared_index=False).items())]
        leaves = [np.asarray([prompt], np.int32), np.asarray([[0, 1]], np.int32), *empty]
        logits = functions["prefill"].run(leaves)[0]  # a v2 call of the prefill
        stream = model.scheduler.submit(model.prepare(prompt, 5, temperature=0.0, top_p=1.0, seed=None,
                                                      stop=None).request)
        tokens = [event.token for event in (stream.next(60.0) for _ in range(6)) if event.token is not None]
        assert tokens == gpt.reference(False, prompt, 5)
        assert tokens[0] == int(np.argmax(logits[0, -1]))
        assert len(_sessions()) - before == len(files)
    finally:
        model.scheduler.close(0.0)
