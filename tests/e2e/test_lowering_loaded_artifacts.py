"""Lowering loaded artifacts under ``jax.jit``: the module is deserialized once or twice per artifact.

Whatever the number of lowerings, call sites and argument shapes, the portable
artifact of a polymorphic function is deserialized once (later lowerings parse
plain MLIR bytecode), that of a function of static shapes at most twice (its
first lowering keeps no bytecode), and the lowered programs are the same
whether the module came from the artifact or from the plain bytecode.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport
from jaxport.adapters.mlir import bindings


def _f(x: jax.Array) -> jax.Array:
    return jnp.tanh(x @ jnp.full((16, 4), 0.5, jnp.float32)).sum(axis=-1)


def _spec(batch: int) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct((batch, 16), jnp.float32)


@pytest.fixture(scope="module")
def blob() -> bytes:
    """``_f`` for any batch size with its VJP, exported once for the module's tests."""
    b, = jaxport.symbolic_shape("b")
    return bytes(jaxport.export(jax.jit(_f))(jax.ShapeDtypeStruct((b, 16), jnp.float32)).serialize(vjp_order=1))


@pytest.fixture
def deserializations(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the portable artifacts that jaxport deserializes (its lowerings, and anything else)."""
    seen: list[int] = []
    real: Callable[..., Any] = bindings.deserialize_portable_artifact

    def counting(portable: bytes, context: Any) -> Any:
        seen.append(len(portable))
        return real(portable, context)

    monkeypatch.setattr("jaxport.adapters.mlir.module.deserialize_portable_artifact", counting)
    return seen


def _lowerings(exp: jaxport.Exported) -> list[str]:
    """Lowerings of ``exp``: several shapes, two call sites in one function, and its gradient."""
    texts = [jax.jit(exp.call).lower(_spec(n)).as_text() for n in (2, 3, 2)]
    texts.append(jax.jit(lambda x: exp.call(x) + exp.call(x[::-1])).lower(_spec(4)).as_text())
    texts.append(jax.jit(jax.grad(lambda x: exp.call(x).sum())).lower(_spec(5)).as_text())
    return texts


def test_an_artifact_is_deserialized_once_for_all_its_lowerings(
        blob: bytes, deserializations: list[int]) -> None:
    exp = jaxport.deserialize(blob)
    texts = _lowerings(exp)
    assert len([n for n in deserializations if n == len(exp.mlir_module_serialized)]) == 1
    assert texts[0] == texts[2]  # the same shape lowers to the same program again
    assert _lowerings(jaxport.deserialize(blob)) == texts  # a new load lowers to the same programs
    x = jnp.linspace(-1.0, 1.0, 48, dtype=jnp.float32).reshape(3, 16)
    np.testing.assert_allclose(jax.jit(exp.call)(x), _f(x), rtol=1e-6)


def test_an_in_process_export_is_lowered_from_its_artifact_once(deserializations: list[int]) -> None:
    b, = jaxport.symbolic_shape("b")
    exp = jaxport.export(jax.jit(_f))(jax.ShapeDtypeStruct((b, 16), jnp.float32))
    _lowerings(exp)
    assert len([n for n in deserializations if n == len(exp.mlir_module_serialized)]) == 1


def test_a_static_artifact_is_deserialized_at_most_twice(deserializations: list[int]) -> None:
    blob = bytes(jaxport.export(jax.jit(_f))(_spec(3)).serialize(vjp_order=1))
    exp = jaxport.deserialize(blob)
    size = len(exp.mlir_module_serialized)
    first = jax.jit(exp.call).lower(_spec(3)).as_text()
    assert deserializations.count(size) == 1
    again = [jax.jit(exp.call).lower(_spec(3)).as_text() for _ in range(3)]
    again.append(jax.jit(lambda x: exp.call(x) + exp.call(x[::-1])).lower(_spec(3)).as_text())
    again.append(jax.jit(jax.grad(lambda x: exp.call(x).sum())).lower(_spec(3)).as_text())
    assert deserializations.count(size) == 2
    assert again[:3] == [first] * 3  # from the artifact and from the plain bytecode alike
    x = jnp.linspace(-1.0, 1.0, 48, dtype=jnp.float32).reshape(3, 16)
    np.testing.assert_allclose(jax.jit(exp.call)(x), _f(x), rtol=1e-6)
