"""The abstract evaluation of the ``jaxport_call`` primitive (src/adapters/jax/exported/call.py)."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from jax.core import ShapedArray
from jax.sharding import AbstractMesh, AxisType
from jax.sharding import PartitionSpec as P

import jaxport
from jaxport.adapters.jax.exported import call as jax_call
from jaxport.adapters.flatbuffers.codec import encode_artifact
from jaxport.adapters.jax.records import sharding_record
from jaxport.adapters.jax.exported.exported import Exported


def symbolic_export() -> Exported:
    b, = jaxport.symbolic_shape("b")
    return jaxport.export(jax.jit(lambda x: (jnp.sin(x), x.sum(axis=1))))(
        jax.ShapeDtypeStruct((b, 16), jnp.float32))


def test_outputs_without_sharding_are_made_for_the_call_shape() -> None:
    exp = symbolic_export()
    target = exp.call_target
    assert target.objects.out_avals is exp.out_avals and target.out_avals_are_plain == (True, True)
    outs = jax_call.abstract_eval(target, (ShapedArray((5, 16), jnp.float32),))
    assert outs == tuple(a.update(shape=s) for a, s in zip(exp.out_avals, [(5, 16), (5,)]))


def test_an_output_sharding_is_kept_for_the_call_shape() -> None:
    record = symbolic_export().record
    mesh = AbstractMesh((1,), ("x",), axis_types=(AxisType.Explicit,))
    sharded = sharding_record(jax.sharding.NamedSharding(mesh, P("x", None)))
    exp = jaxport.deserialize(encode_artifact(dataclasses.replace(record, out_shardings=(sharded, None))))
    target = exp.call_target
    assert target.out_avals_are_plain == (False, True)
    first, second = jax_call.abstract_eval(target, (ShapedArray((7, 16), jnp.float32),))
    assert first.shape == (7, 16) and first.sharding.spec == P("x", None)
    assert first.sharding.mesh == mesh and second.shape == (7,)


def test_one_target_per_export_holds_its_jax_objects_and_prints_short() -> None:
    exp = symbolic_export()
    target = exp.call_target
    assert exp.call_target is target and target.objects.in_tree is exp.in_tree
    assert repr(target) == "<exported <lambda>>" and target.fun_name == exp.record.function_name
    assert jax_call.abstract_eval(exp.vjp().call_target, (ShapedArray((3, 16), jnp.float32),) * 2
                                  + (ShapedArray((3,), jnp.float32),))[0].shape == (3, 16)
