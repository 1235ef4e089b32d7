"""Exporting the result of jax.jit: static arguments and shardings are respected."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding, PartitionSpec

import jaxport
from jaxport.errors import TreeMismatchError


@partial(jax.jit, static_argnums=1, static_argnames="mode")
def scaled(x: jax.Array, n: int, mode: str = "mul") -> jax.Array:
    return x * n if mode == "mul" else x - n


def test_static_arguments_are_baked_in_and_left_out_of_the_signature() -> None:
    x = np.arange(3, dtype=np.float32)
    exp = jaxport.export(scaled)(x, 3, mode="sub")
    ref = jax.export.export(scaled)(x, 3, mode="sub")
    assert exp.in_tree == ref.in_tree and exp.in_avals == ref.in_avals
    np.testing.assert_array_equal(exp.call(x), x - 3)


def test_passing_a_static_argument_again_is_a_tree_mismatch() -> None:
    x = np.arange(3, dtype=np.float32)
    exp = jaxport.export(scaled)(x, 3, mode="sub")
    with pytest.raises(TreeMismatchError, match="args is a tuple of length 2 in the invocation"):
        exp.call(x, 3, mode="sub")


def test_shardings_given_to_jit_are_recorded() -> None:
    mesh = Mesh(np.array(jax.devices()[:1]), ("a",))
    sharding = NamedSharding(mesh, PartitionSpec("a"))
    f = jax.jit(lambda x: jnp.sin(x), in_shardings=sharding, out_shardings=sharding)
    exp = jaxport.export(f)(jax.ShapeDtypeStruct((4,), jnp.float32))
    assert exp.nr_devices == 1
    assert exp.in_shardings[0] is not None and exp.out_shardings[0] is not None
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_allclose(exp.call(x), np.sin(x), rtol=1e-6)


def test_a_plain_callable_is_jitted_as_the_2023_api_did() -> None:
    exp = jaxport.export(lambda x: x + 1)(np.zeros((2,), np.int32))
    assert exp.fun_name == "<lambda>"
    np.testing.assert_array_equal(exp.call(np.ones((2,), np.int32)), [2, 2])


def test_something_not_callable_is_refused() -> None:
    with pytest.raises(TypeError, match="must be callable"):
        jaxport.export(42)(np.zeros(()))  # type: ignore[arg-type]
