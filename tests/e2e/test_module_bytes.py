"""Separate lowerings by jaxport and jax.export give byte-identical modules."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport


def fresh_mlp() -> Callable[..., Any]:
    # A new function object each time, so neither exporter reuses a cached lowering.
    def mlp(w: jax.Array, x: jax.Array) -> jax.Array:
        return jnp.tanh(x @ w).sum(axis=0)
    return mlp


def export_with(exporter: Callable[..., Any], platforms: tuple[str, ...]) -> Any:
    spec = (jax.ShapeDtypeStruct((4, 3), jnp.float32), jax.ShapeDtypeStruct((2, 4), jnp.float32))
    return exporter(jax.jit(fresh_mlp()), platforms=platforms)(*spec)


@pytest.mark.parametrize("platforms", [("cpu",), ("cpu", "cuda", "tpu")])
def test_independent_lowerings_serialize_to_the_same_bytes(platforms: tuple[str, ...]) -> None:
    # One call site for both, since the whole Python stack is in the locations.
    ours, theirs = [export_with(exporter, platforms) for exporter in (jaxport.export, jax.export.export)]
    assert ours.mlir_module_serialized == theirs.mlir_module_serialized


def test_locations_point_at_user_code_not_at_jaxport() -> None:
    text = jaxport.export(jnp.sin)(np.zeros(3, np.float32)).mlir_module()
    assert "jaxport/adapters" not in text and "jaxport/application" not in text
    assert "test_module_bytes.py" in text
