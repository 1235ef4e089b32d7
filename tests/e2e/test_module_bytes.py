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
    # A function of this file: JAX 0.12.1 locates the body of a jitted jnp.sin in JAX's own sources.
    def user_code(x: jax.Array) -> jax.Array:
        return jnp.sin(x)

    text = jaxport.export(user_code)(np.zeros(3, np.float32)).mlir_module()
    assert "jaxport/adapters" not in text and "jaxport/application" not in text
    assert "test_module_bytes.py" in text


SYMBOLIC_CASES: dict[str, tuple[Callable[..., Any], list[str], tuple[str, ...]]] = {
    "one_variable": (lambda x: jnp.sin(x), ["b, 4"], ()),
    "linear_dimension": (lambda x, y: jnp.sin(x) + y[:, :1].sum(), ["b, 4", "2*b + 1, 3"], ()),
    "reshape": (lambda x: x.reshape(-1), ["b, 4"], ()),
    "two_variables": (lambda x, y: jnp.concatenate([x, y]), ["b, 4", "c, 4"], ()),
    "arange": (lambda x: x + jnp.arange(x.shape[0])[:, None], ["b, 4"], ()),
    "shared_inner_dimension": (lambda x, w: x @ w, ["b, k", "k, 3"], ()),
    "user_constraint": (lambda x: x * 2, ["b, 4"], ("b >= 4",)),
}


def export_symbolic(exporter: Callable[..., Any], lib: Any, case: str) -> Any:
    f, specs, constraints = SYMBOLIC_CASES[case]
    scope = lib.SymbolicScope(constraints)
    args = [jax.ShapeDtypeStruct(lib.symbolic_shape(s, scope=scope), jnp.float32) for s in specs]
    return exporter(jax.jit(f))(*args)


@pytest.mark.parametrize("case", SYMBOLIC_CASES)
def test_polymorphic_modules_with_linear_dimensions_are_byte_identical(case: str) -> None:
    # Variables solved by an exact division (2*b, 4*c + 1) still differ: jax.export
    # emits its divmod as a private function where jaxport emits the ops inline.
    ours, theirs = [export_symbolic(exporter, lib, case)
                    for exporter, lib in ((jaxport.export, jaxport), (jax.export.export, jax.export))]
    assert ours.mlir_module_serialized == theirs.mlir_module_serialized
