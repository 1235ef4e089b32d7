"""Calling an export while JAX stages a jaxpr: the primitive joins the caller's trace.

Under ``jax.jit``, ``jax.eval_shape`` or an export, ``exp.call`` binds the
``jaxport_call`` primitive directly (a nested ``jax.jit`` would add a second
trace for nothing); an eager call keeps its jitted fast path. The checks and
errors are those of every other call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType
from jax.sharding import PartitionSpec as P

import jaxport
from jaxport.errors import ShapeMismatchError, TreeMismatchError


@pytest.fixture(scope="module")
def exported() -> jaxport.Exported:
    b, = jaxport.symbolic_shape("b")
    return jaxport.export(jax.jit(lambda x, s: jnp.sin(x) * s))(
        jax.ShapeDtypeStruct((b, 3), jnp.float32), jax.ShapeDtypeStruct((), jnp.float32))


def test_a_staged_call_is_the_primitive_itself_in_the_callers_jaxpr(exported: jaxport.Exported) -> None:
    jaxpr = jax.make_jaxpr(exported.call)(np.ones((4, 3), np.float32), np.float32(2))
    assert [eqn.primitive.name for eqn in jaxpr.eqns] == ["jaxport_call"]
    assert [getattr(v.aval, "shape") for v in jaxpr.jaxpr.outvars] == [(4, 3)]


def test_a_staged_call_computes_what_an_eager_call_does(exported: jaxport.Exported) -> None:
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    eager = exported.call(x, np.float32(2))
    np.testing.assert_allclose(jax.jit(exported.call)(x, np.float32(2)), eager)
    np.testing.assert_allclose(jax.jit(lambda y: exported.call(y, 2.0) + 1)(x), eager + 1, rtol=1e-6)
    assert jax.eval_shape(exported.call, jax.ShapeDtypeStruct((7, 3), jnp.float32),
                          jax.ShapeDtypeStruct((), jnp.float32)).shape == (7, 3)


def test_a_staged_call_checks_its_arguments(exported: jaxport.Exported) -> None:
    x = np.ones((4, 3), np.float32)
    with pytest.raises(ShapeMismatchError, match=r"args\[0\]\.shape\[1\]"):
        jax.jit(lambda y: exported.call(y, 2.0))(np.ones((4, 5), np.float32))
    with pytest.raises(TreeMismatchError, match="structural differences"):
        jax.jit(lambda y: exported.call(y))(x)
    with pytest.raises(TypeError, match="<class 'str'>"):
        jax.jit(lambda y: exported.call(y, "two"))(x)


STAGING_CONTEXTS: dict[str, Callable[[Callable[[Any], Any], Any], Any]] = {
    "scan": lambda f, x: jax.lax.scan(lambda c, _: (f(c), None), x, None, length=2)[0],
    "cond": lambda f, x: jax.lax.cond(x[0] >= 0, f, lambda y: y, x),
    "checkpoint": lambda f, x: jax.checkpoint(f)(x),
    "shard_map": lambda f, x: jax.shard_map(
        f, mesh=jax.make_mesh((1,), ("d",), axis_types=(AxisType.Auto,)),
        in_specs=P("d"), out_specs=P("d"))(x),
}


@pytest.mark.parametrize("context", list(STAGING_CONTEXTS))
def test_a_call_staged_inside_a_control_flow_or_mapping_body_runs(context: str) -> None:
    exp = jaxport.export(jax.jit(lambda x: jnp.sin(x) * 2))(jax.ShapeDtypeStruct((4,), jnp.float32))
    x = np.arange(4, dtype=np.float32)
    run = STAGING_CONTEXTS[context]
    expected = run(lambda y: jnp.sin(y) * 2, x)
    np.testing.assert_allclose(jax.jit(lambda y: run(exp.call, y))(x), expected, rtol=1e-6)
