"""A small model for the bundle tests: weights of several dtypes and node kinds, two functions."""

from __future__ import annotations

import functools
import json
import shutil
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.export
import jax.numpy as jnp
import numpy as np

import jaxport


class Dense(NamedTuple):
    w: Any
    b: Any


jaxport.register_namedtuple_serialization(Dense, serialized_name="tests.bundle_model.Dense")
# jax.export reads the bundle's artifacts too (tests only: jaxport never imports jax.export).
jax.export.register_namedtuple_serialization(Dense, serialized_name="tests.bundle_model.Dense")


def make_params(seed: int = 0) -> dict[str, Any]:
    """Weights: a namedtuple layer, a list, a None, bfloat16, int8, bool and a PRNG key."""
    rng = np.random.default_rng(seed)
    return {
        "dense": Dense(jnp.asarray(rng.normal(size=(4, 3)), jnp.float32), jnp.asarray(rng.normal(size=3), jnp.float32)),
        "layers": [{"scale": jnp.asarray(rng.normal(size=3), jnp.bfloat16)}],
        "mask": jnp.asarray([True, False, True]),
        "offset": jnp.asarray(rng.integers(-5, 5, size=3), jnp.int8),
        "rng": jax.random.key(seed),
        "unused": None,
    }


def predict(params: dict[str, Any], x: jax.Array) -> Any:
    dense = params["dense"]
    h = jnp.tanh(x @ dense.w + dense.b) * params["layers"][0]["scale"].astype(jnp.float32)
    h = jnp.where(params["mask"], h, 0.0) + params["offset"].astype(jnp.float32)
    noise = jax.random.uniform(params["rng"], (3,))
    return h + 0.0 * noise


def loss(params: dict[str, Any], x: jax.Array, y: jax.Array) -> jax.Array:
    return jnp.mean((predict(params, x) - y) ** 2)


def init(seed: jax.Array) -> jax.Array:
    return jnp.full((3,), seed, jnp.float32)


def specs(tree: Any) -> Any:
    return jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), tree)


@functools.cache
def exported() -> dict[str, jaxport.Exported]:
    """predict and loss for any batch size b, and init, which takes no weights."""
    b, = jaxport.symbolic_shape("b")
    p = specs(make_params())
    x = jax.ShapeDtypeStruct((b, 4), jnp.float32)
    y = jax.ShapeDtypeStruct((b, 3), jnp.float32)
    return {"predict": jaxport.export(jax.jit(predict))(p, x),
            "loss": jaxport.export(jax.jit(loss))(p, x, y),
            "init": jaxport.export(jax.jit(init))(jax.ShapeDtypeStruct((), jnp.float32))}


def save(path: Path, seed: int = 0, **kwargs: Any) -> Path:
    """Saves the model's bundle at ``path``."""
    kwargs.setdefault("vjp_order", 1)
    kwargs.setdefault("without_params", ("init",))
    jaxport.save_bundle(path, exported(), make_params(seed), **kwargs)
    return path


def inputs(batch: int) -> tuple[jax.Array, jax.Array]:
    x = jnp.asarray(np.linspace(-1, 1, batch * 4, dtype=np.float32).reshape(batch, 4))
    y = jnp.asarray(np.linspace(0, 1, batch * 3, dtype=np.float32).reshape(batch, 3))
    return x, y


def examples() -> dict[str, list[tuple[tuple[Any, ...], dict[str, Any]]]]:
    """Golden examples for every function: two batch sizes of predict, one of loss, one of init."""
    (x3, y3), (x5, _) = inputs(3), inputs(5)
    return {"predict": [((x3,), {}), ((x5,), {})], "loss": [((x3, y3), {})],
            "init": [((np.float32(2.0),), {})]}


def swap_weights(path: Path, other: Path) -> None:
    """Gives the bundle at ``path`` the weights of the one at ``other`` (same shapes), with a manifest
    re-written to match them: every digest checks, only the numbers changed."""
    manifest = json.loads((path / "manifest.json").read_text())
    theirs = json.loads((other / "manifest.json").read_text())
    shutil.copyfile(other / "params.safetensors", path / "params.safetensors")
    manifest["params"] = theirs["params"]
    manifest["files"]["params.safetensors"] = theirs["files"]["params.safetensors"]
    (path / "manifest.json").write_text(json.dumps(manifest))
