"""Models for the LiteRT tests, each converted once per test process (the conversions are cached).

- ``predict`` and ``loss`` of the IREE tests' tiny transformer over token ids
  (embedding gather, layer norm, softmax attention, GELU MLP) with its weights
  folded in: ``predict`` keeps its batch dynamic, ``loss`` (whose
  ``take_along_axis`` gathers from a dynamically shaped operand, which the
  converter refuses) is converted for b=2 and b=5;
- a CNN (convolution, ReLU, max pooling, a dense head) with a dynamic batch;
- ``stats``, static, with a dict result, exported by ``jax.export`` for CPU and CUDA;
- an MLP large enough for ``int8-weights`` to shrink it, in float32 and quantized.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.export
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport
from jaxport.domain.targets.litert import FLOAT32_TOLERANCE
from jaxport.domain.converted.numerics import Tolerance
from jaxport.domain.calls.front import with_weights_bound
from jaxport.domain.artifact.record import ArtifactRecord
from tests.helpers import iree_model

HAS_CONVERTER = all(importlib.util.find_spec(m) is not None
                    for m in ("litert_converter", "ai_edge_litert", "ai_edge_quantizer"))
#: Marks a module whose tests convert: they skip where the extra cannot be installed.
needs_converter = pytest.mark.skipif(not HAS_CONVERTER, reason="needs the extra jaxport[litert] (litert-converter, "
                                                                "ai-edge-litert, ai-edge-quantizer)")

LOSS_DIMS = [{"b": 2}, {"b": 5}]


@functools.cache
def transformer_weights() -> list[np.ndarray]:
    return [np.asarray(a) for a in jax.tree.leaves(iree_model.make_params())]


def cnn_params(seed: int = 0) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    return {"conv": jnp.asarray(rng.normal(size=(3, 3, 1, 4)) / 3, jnp.float32),
            "dense": jnp.asarray(rng.normal(size=(64, 3)) / 8, jnp.float32)}


def cnn(p: dict[str, Any], x: jax.Array) -> jax.Array:
    y = jax.lax.conv_general_dilated(x, p["conv"], (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    y = jax.lax.reduce_window(jax.nn.relu(y), -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    out: jax.Array = y.reshape(y.shape[0], -1) @ p["dense"]
    return out


def images(batch: int) -> np.ndarray:
    return np.random.default_rng(batch).normal(size=(batch, 8, 8, 1)).astype(np.float32)


def mlp_params(seed: int = 0) -> list[jax.Array]:
    rng = np.random.default_rng(seed)
    sizes = [(64, 256), (256,), (256, 256), (256,), (256, 10), (10,)]
    return [jnp.asarray(rng.normal(size=s) / np.sqrt(s[0] if len(s) == 2 else 16), jnp.float32) for s in sizes]


def mlp(p: list[jax.Array], x: jax.Array) -> jax.Array:
    h = jax.nn.relu(x @ p[0] + p[1])
    h = jax.nn.relu(h @ p[2] + p[3])
    out: jax.Array = h @ p[4] + p[5]
    return out


def mlp_inputs(batch: int) -> np.ndarray:
    return np.random.default_rng(batch + 100).normal(size=(batch, 64)).astype(np.float32)


@functools.cache
def records() -> dict[str, ArtifactRecord]:
    """The functions to convert, by name."""
    b, = jaxport.symbolic_shape("b")
    exported = iree_model.exported()
    specs = functools.partial(jax.tree.map, lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype))
    stats = jax.export.export(jax.jit(iree_model.stats), platforms=("cpu", "cuda"))(
        jax.ShapeDtypeStruct((5, 3), jnp.float32))
    return {"predict": exported["predict"].record, "loss": exported["loss"].record,
            "cnn": jaxport.export(jax.jit(cnn))(specs(cnn_params()), jax.ShapeDtypeStruct((b, 8, 8, 1), jnp.float32)).record,
            "stats": jaxport.deserialize(stats.serialize()).record,
            "mlp": jaxport.export(jax.jit(mlp))(specs(mlp_params()), jax.ShapeDtypeStruct((b, 64), jnp.float32)).record}


def weights(name: str) -> list[np.ndarray]:
    if name in ("predict", "loss"):
        return transformer_weights()
    params = {"cnn": cnn_params, "mlp": mlp_params}.get(name)
    return [] if params is None else [np.asarray(a) for a in jax.tree.leaves(params())]


def wire_names(record: ArtifactRecord, nr_weights: int = 0) -> tuple[list[str], list[str]]:
    """The wire names of the caller's flat inputs (the weights left out) and of the flat results."""
    caller = with_weights_bound(record.signature, nr_weights)
    return list(caller.input_names), list(caller.output_names)


def names(name: str) -> tuple[list[str], list[str]]:
    return wire_names(records()[name], len(weights(name)))


def convert_function(name: str, record: ArtifactRecord, *, weights: Sequence[np.ndarray] = (),
                     input_names: Sequence[str], output_names: Sequence[str],
                     bindings: Sequence[Mapping[str, int]] | None = None, quantize: str | None = None) -> list[Any]:
    """LiteRT's ``convert_function`` given the static shapes the pipeline would give it for ``bindings``
    (the plan's binding checks run here, as in the pipeline; its other refusals are the pipeline's)."""
    from jaxport.adapters.litert.converter import convert_function
    from jaxport.domain.targets.litert import PLAN
    from jaxport.domain.targets.plan import variant_shapes

    shapes = variant_shapes(PLAN, name, record, bindings, nr_weights=len(weights))
    return convert_function(name, record, weights=weights, input_names=input_names, output_names=output_names,
                            shapes=shapes, quantize=quantize)


@functools.cache
def converted(name: str, quantize: str | None = None) -> list[Any]:
    """The LiteRT variants of ``name`` (``loss`` for :data:`LOSS_DIMS`, the others dynamic or static)."""
    ins, outs = names(name)
    bindings: Sequence[Mapping[str, int]] | None = LOSS_DIMS if name == "loss" else None
    return convert_function(name, records()[name], weights=weights(name), input_names=ins, output_names=outs,
                            bindings=bindings, quantize=quantize)


def expected(name: str, *args: Any) -> list[np.ndarray]:
    """``jax.jit`` of the original function on ``args``, flat."""
    table: dict[str, tuple[Callable[..., Any], Any]] = {"predict": (iree_model.predict, iree_model.make_params()),
                   "loss": (iree_model.loss, iree_model.make_params()),
                   "cnn": (cnn, cnn_params()), "mlp": (mlp, mlp_params()),
                   "stats": (iree_model.stats, None)}
    fun, params = table[name]
    out = jax.jit(fun)(*args) if params is None else jax.jit(fun)(params, *args)
    return [np.asarray(leaf) for leaf in jax.tree.leaves(out)]


def assert_close(got: list[np.ndarray], want: list[np.ndarray], tolerance: Tolerance = FLOAT32_TOLERANCE) -> None:
    """Each output within ``tolerance`` of JAX's, normwise (as jaxport's numerics check compares)."""
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        error, scale = float(np.max(np.abs(g - w), initial=0.0)), float(np.max(np.abs(w), initial=0.0))
        assert tolerance.allows(error, scale), f"error {error:g} for values up to {scale:g}, beyond {tolerance}"
