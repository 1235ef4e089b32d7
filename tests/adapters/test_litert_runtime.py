"""LiteRT's runtime adapter: signature runners on flat arrays, in a process that imports no JAX and no TensorFlow."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import iree_model
from tests.helpers import litert_model as model
from tests.helpers.litert_model import assert_close

pytestmark = model.needs_converter

CHILD = """
import json, sys
import numpy as np
from jaxport.adapters.litert.runtime import LiteRtModel
predict, stats, out = sys.argv[1:4]
names = json.loads(sys.argv[4])
run = LiteRtModel(predict).function("predict", *names["predict"])
results = {f"predict{b}": run([np.random.default_rng(1).integers(0, 32, size=(b, 8)).astype(np.int32)])[0]
           for b in (1, 3, 7)}
[mx, mean, l2] = LiteRtModel(stats, xnnpack=False).function("stats", *names["stats"])(
    [np.linspace(-2, 3, 15, dtype=np.float32).reshape(5, 3)])
np.savez(out, max=mx, mean=mean, l2=l2, **results)
print(json.dumps(sorted(n for n in ("jax", "jaxlib", "tensorflow") if n in sys.modules)))
"""


def test_a_child_runs_tflite_files_without_jax_jaxlib_or_tensorflow_equal_to_jax(tmp_path: Path) -> None:
    files = {}
    for name in ("predict", "stats"):
        files[name] = tmp_path / f"{name}.tflite"
        files[name].write_bytes(model.converted(name)[0].model)
    names = {name: model.names(name) for name in files}
    out = tmp_path / "results.npz"
    done = subprocess.run([sys.executable, "-c", CHILD, str(files["predict"]), str(files["stats"]), str(out),
                           json.dumps(names)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
    got = np.load(out)
    for b in (1, 3, 7):
        ids = iree_model.token_ids(b)
        assert_close([got[f"predict{b}"]], model.expected("predict", ids))
    assert_close([got["max"], got["mean"], got["l2"]], model.expected("stats", iree_model.STATS_INPUT))


def test_a_model_names_its_signatures_and_refuses_other_names() -> None:
    from jaxport.adapters.litert.runtime import LiteRtModel
    from jaxport.errors import ArtifactError

    m = LiteRtModel(model.converted("loss")[0].model)
    assert m.signatures == {"loss": {"inputs": ["arg0", "arg1"], "outputs": ["output_0"]}}
    with pytest.raises(ArtifactError, match=r"no signature 'predict'; it has \['loss'\]"):
        m.function("predict", ["arg0"], ["output_0"])
    with pytest.raises(ArtifactError, match=r"takes \['arg0', 'arg1'\] and returns \['output_0'\], not"):
        m.function("loss", ["ids", "targets"], ["output_0"])


def test_the_signature_order_is_the_callers_not_litrets() -> None:
    from jaxport.adapters.litert.runtime import LiteRtModel

    m = LiteRtModel(model.converted("loss")[0].model)
    ids, targets = iree_model.token_ids(2), iree_model.token_ids(2, seed=7)
    [forward] = m.function("loss", ["arg0", "arg1"], ["output_0"])([ids, targets])
    [backward] = m.function("loss", ["arg1", "arg0"], ["output_0"])([targets, ids])
    assert forward == backward
    [swapped] = m.function("loss", ["arg0", "arg1"], ["output_0"])([targets, ids])
    assert swapped != forward


def test_bytes_that_are_not_a_model_are_refused_by_the_reader_and_by_litert(tmp_path: Path) -> None:
    from jaxport.adapters.litert.runtime import LiteRtLoadError, LiteRtModel
    from jaxport.adapters.litert.tflite_file import read_flatbuffer
    from jaxport.errors import ArtifactError

    blob = model.converted("stats")[0].model
    with pytest.raises(ValueError, match="not a LiteRT"):
        read_flatbuffer(blob[:4] + b"PK\x03\x04" + blob[8:])
    with pytest.raises(ValueError, match="not a valid LiteRT"):
        read_flatbuffer(b"\xff\xff\xff\x0f" + blob[4:])
    with pytest.raises(LiteRtLoadError, match="LiteRT cannot open the model"):
        LiteRtModel(blob[: len(blob) // 3])
    with pytest.raises(LiteRtLoadError, match="LiteRT cannot open the model") as refused:
        LiteRtModel(tmp_path / "missing.tflite")
    assert isinstance(refused.value, ArtifactError) and type(refused.value).__name__ == "ArtifactError"
