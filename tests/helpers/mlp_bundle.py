"""The one-layer MLP bundle that the tests of hostile and unexamined converted directories convert.

``tanh(x @ w + b)``, ``x`` of shape (2, 4), saved with one golden example
(:data:`X`) or, as the README saves a bundle, without any.
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import jaxport

#: The golden example's input (and the input the tests call with).
X = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)


def predict(p: dict[str, jax.Array], x: jax.Array) -> jax.Array:
    """The layer."""
    return jnp.tanh(x @ p["w"] + p["b"])


def save_mlp_bundle(root: Path, *, examples: bool = True) -> Path:
    """Saves the bundle at ``root`` (one function, ``predict``), with the golden example :data:`X` or none."""
    params = {"w": jnp.arange(12, dtype=jnp.float32).reshape(4, 3) / 10, "b": jnp.ones((3,), jnp.float32)}
    exported = jaxport.export(jax.jit(predict))(params, jax.ShapeDtypeStruct((2, 4), jnp.float32))
    jaxport.save_bundle(root, {"predict": exported}, params,
                        examples={"predict": [((X,), {})]} if examples else None)
    return root
