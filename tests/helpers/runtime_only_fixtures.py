"""The directories that the runtime-only tests (tests/runtime_only) read, made where JAX is installed.

``python -m tests.helpers.runtime_only_fixtures ROOT`` writes, for a small
model with golden examples (``predict(params, x)``, ``x: (2, 4) float32``):

* ``ROOT/bundle``: the bundle (serving it needs JAX);
* ``ROOT/predict.jaxport``: its function exported alone, without weights;
* ``ROOT/onnx``, ``ROOT/litert``, ``ROOT/iree``: the bundle converted for each
  target that has a runtime-only extra (``onnx-runtime``, ``litert-runtime``,
  ``iree-runtime``); each holds the examples, which ``check --numerics`` compares;
* ``ROOT/x.npy`` and ``ROOT/expected.npy``: an input and what ``predict`` gives for it.

The runtime-only virtual environment (``make test-runtime-only``) then runs
``pytest tests/runtime_only`` with ``JAXPORT_RUNTIME_ONLY_FIXTURES=ROOT``.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np

#: The converted directories, by target; each target's runtime-only extra runs it. (This module
#: imports JAX only in :func:`build`: the runtime-only tests import it for these names.)
TARGETS = ("onnx", "litert", "iree")


def predict(params: dict[str, Any], x: Any) -> Any:
    """A dense layer with a tanh (on JAX's arrays when traced)."""
    import jax.numpy as jnp

    return jnp.tanh(x @ params["w"] + params["b"])


def build(root: Path) -> None:
    """Writes the directories (replacing ``root``)."""
    import jax

    import jaxport

    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    rng = np.random.default_rng(7)
    params = {"w": rng.normal(size=(4, 3)).astype(np.float32), "b": rng.normal(size=(3,)).astype(np.float32)}
    x = rng.normal(size=(2, 4)).astype(np.float32)
    specs = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), params)
    exp = jaxport.export(jax.jit(predict))(specs, jax.ShapeDtypeStruct(x.shape, x.dtype))
    jaxport.save_bundle(root / "bundle", {"predict": exp}, params, examples={"predict": [((x,), {})]})
    alone = jaxport.export(jax.jit(lambda x: predict(params, x)))(jax.ShapeDtypeStruct(x.shape, x.dtype))
    jaxport.save(alone, root / "predict.jaxport")
    for target in TARGETS:
        jaxport.convert(root / "bundle", root / target, to=target)
    np.save(root / "x.npy", x)
    np.save(root / "expected.npy", np.asarray(predict(params, x)))


if __name__ == "__main__":
    build(Path(sys.argv[1]))
