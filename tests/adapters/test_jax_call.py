"""The abstract evaluation of the ``jaxport_call`` primitive (src/adapters/jax_call.py)."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from jax.core import ShapedArray
from jax.sharding import AbstractMesh, AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

import jaxport
from jaxport.adapters import jax_call, jax_internals


def symbolic_target() -> jax_call.CallTarget:
    b, = jaxport.symbolic_shape("b")
    exp = jaxport.export(jax.jit(lambda x: (jnp.sin(x), x.sum(axis=1))))(
        jax.ShapeDtypeStruct((b, 16), jnp.float32))
    return exp.call_target


def test_outputs_without_sharding_are_made_for_the_call_shape() -> None:
    target = symbolic_target()
    assert target.out_avals_are_plain == (True, True)
    outs = jax_call.abstract_eval(target, (ShapedArray((5, 16), jnp.float32),))
    assert outs == tuple(a.update(shape=s) for a, s in zip(target.out_avals, [(5, 16), (5,)]))


def test_an_output_sharding_is_kept_for_the_call_shape() -> None:
    target = symbolic_target()
    mesh = AbstractMesh((1,), ("x",), axis_types=(AxisType.Explicit,))
    sharded = jax_internals.update_aval_with_sharding(target.out_avals[0], NamedSharding(mesh, P("x", None)))
    target = dataclasses.replace(target, out_avals=(sharded, target.out_avals[1]))
    assert target.out_avals_are_plain == (False, True)
    first, second = jax_call.abstract_eval(target, (ShapedArray((7, 16), jnp.float32),))
    assert first.shape == (7, 16) and first.sharding.spec == P("x", None)
    assert first.sharding.mesh == mesh and second.shape == (7,)
