"""A small bundle and its conversions for the batch interface and the engines' tests.

``predict(params, x)`` on ``float32[b, 4]`` gives a dict of two outputs, ``y``
(``float32[b, 3]``) and ``norm`` (``float32[b]``), with golden examples. The
bundle needs JAX to write; its ONNX directory runs on ONNX Runtime alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

FEATURES, OUTPUTS = 4, 3


def params() -> dict[str, Any]:
    """The weights: ``w`` (4 x 3) and ``bias`` (3)."""
    rng = np.random.default_rng(0)
    return {"w": rng.normal(size=(FEATURES, OUTPUTS)).astype(np.float32),
            "bias": rng.normal(size=(OUTPUTS,)).astype(np.float32)}


def rows(count: int, seed: int = 1) -> Any:
    """``count`` rows of inputs, ``float32[count, 4]``."""
    return np.random.default_rng(seed).normal(size=(count, FEATURES)).astype(np.float32)


def expected(x: Any) -> dict[str, Any]:
    """What ``predict`` gives for ``x``, with NumPy."""
    p = params()
    return {"y": x @ p["w"] + p["bias"], "norm": (x * x).sum(axis=1)}


def make_bundle(root: Path) -> Path:
    """The bundle at ``root/bundle`` (golden examples of 2 rows)."""
    import jax
    import jax.numpy as jnp

    import jaxport

    def predict(p: dict[str, Any], x: Any) -> dict[str, Any]:
        return {"y": x @ p["w"] + p["bias"], "norm": jnp.sum(x * x, axis=1)}

    b, = jaxport.symbolic_shape("b")
    p = params()
    exported = jaxport.export(jax.jit(predict))(
        {k: jax.ShapeDtypeStruct(v.shape, jnp.float32) for k, v in p.items()},
        jax.ShapeDtypeStruct((b, FEATURES), jnp.float32))
    jaxport.save_bundle(root / "bundle", {"predict": exported}, p, examples={"predict": [((rows(2),), {})]})
    return root / "bundle"


def make_onnx(root: Path) -> Path:
    """The bundle converted to ONNX at ``root/onnx`` (any batch size)."""
    import jaxport

    bundle = root / "bundle" if (root / "bundle").is_dir() else make_bundle(root)
    jaxport.to_onnx(bundle, root / "onnx")
    return root / "onnx"
