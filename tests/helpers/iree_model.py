"""Small models for the IREE tests: a tiny transformer bundle over token ids, and a static artifact.

The bundle's ``predict`` takes ``int32[b, SEQ]`` token ids for any batch
``b <= 64`` (an embedding gather, layer norm, softmax attention, a GELU MLP)
and its ``loss`` adds a cross-entropy; ``stats`` is a static function with a
dict result, exported by ``jax.export`` for CPU and CUDA.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import jax
import jax.export
import jax.numpy as jnp
import numpy as np

import jaxport

VOCAB, WIDTH, SEQ = 32, 16, 8


def make_params(seed: int = 0) -> dict[str, Any]:
    rng = np.random.default_rng(seed)

    def normal(*shape: int) -> jax.Array:
        return jnp.asarray(rng.normal(size=shape) / np.sqrt(shape[0]), jnp.float32)

    return {"embed": normal(VOCAB, WIDTH),
            "ln": {"scale": jnp.ones(WIDTH, jnp.float32), "bias": jnp.zeros(WIDTH, jnp.float32)},
            "attn": {"q": normal(WIDTH, WIDTH), "k": normal(WIDTH, WIDTH), "v": normal(WIDTH, WIDTH)},
            "mlp": [normal(WIDTH, 2 * WIDTH), normal(2 * WIDTH, WIDTH)],
            "head": normal(WIDTH, VOCAB)}


def layer_norm(h: jax.Array, p: dict[str, jax.Array]) -> jax.Array:
    mean = jnp.mean(h, axis=-1, keepdims=True)
    var = jnp.var(h, axis=-1, keepdims=True)
    return (h - mean) * jax.lax.rsqrt(var + 1e-5) * p["scale"] + p["bias"]


def predict(p: dict[str, Any], ids: jax.Array) -> jax.Array:
    h = layer_norm(p["embed"][ids], p["ln"])
    q, k, v = (h @ p["attn"][name] for name in "qkv")
    attention = jax.nn.softmax(q @ jnp.swapaxes(k, -1, -2) / np.sqrt(WIDTH), axis=-1)
    h = h + attention @ v
    h = h + jax.nn.gelu(h @ p["mlp"][0]) @ p["mlp"][1]
    logits: jax.Array = h @ p["head"]
    return logits


def loss(p: dict[str, Any], ids: jax.Array, targets: jax.Array) -> jax.Array:
    logp = jax.nn.log_softmax(predict(p, ids))
    return -jnp.mean(jnp.take_along_axis(logp, targets[..., None], axis=-1))


@functools.cache
def exported() -> dict[str, jaxport.Exported]:
    b, = jaxport.symbolic_shape("b", constraints=("b <= 64",))
    p = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), make_params())
    ids = jax.ShapeDtypeStruct((b, SEQ), jnp.int32)
    return {"predict": jaxport.export(jax.jit(predict))(p, ids),
            "loss": jaxport.export(jax.jit(loss))(p, ids, ids)}


def save_bundle(path: Path) -> Path:
    jaxport.save_bundle(path, exported(), make_params())
    return path


def token_ids(batch: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, VOCAB, size=(batch, SEQ)).astype(np.int32)


def stats(x: Any) -> dict[str, Any]:
    return {"mean": jnp.mean(x, axis=0), "max": jnp.max(x, axis=0), "norm": {"l2": jnp.sqrt(jnp.sum(x * x))}}


STATS_INPUT = np.linspace(-2, 3, 15, dtype=np.float32).reshape(5, 3)


def save_stats(path: Path) -> Path:
    """``stats`` for f32[5, 3], exported by ``jax.export`` for CPU and CUDA, as an artifact file."""
    exp = jax.export.export(jax.jit(stats), platforms=("cpu", "cuda"))(jax.ShapeDtypeStruct((5, 3), jnp.float32))
    path.write_bytes(exp.serialize())
    return path
