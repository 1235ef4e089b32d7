"""Unreduced shardings (JAX 0.12.1's "high" avals), as jax.export 0.12.1 exports and calls them.

An export whose argument or result is sharded with ``unreduced`` axes records
the type the caller sees (``float32[4,4]{U:x}``) and the spec's unreduced
axes, while ``main`` takes the lowered type (one more leading dimension per
unreduced mesh axis): jaxport writes the bytes jax.export writes, and calls
such an export (made here or read from either's bytes) through the lowered
types, as jax.export's call does. Exporting their VJP is refused by JAX's own
differentiation in both.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, PartitionSpec as P

import jaxport

pytestmark = [
    pytest.mark.skipif(jax.device_count() < 2, reason="needs 2 devices (tests/helpers/jax_setup.py)"),
    pytest.mark.skipif(tuple(int(p) for p in jax.__version__.split(".")[:3]) < (0, 12, 1),
                       reason="jax.export records unreduced types from JAX 0.12.1"),
]

A = np.arange(16, dtype=np.float32).reshape(4, 4) / 10


@jax.jit
def product(x: jax.Array, y: jax.Array) -> jax.Array:
    """An unreduced result: each device holds a partial sum."""
    return jnp.einsum("ab,bc->ac", x, y, out_sharding=P(None, None, unreduced={"x"}))


@jax.jit
def reduced(z: jax.Array) -> jax.Array:
    """An unreduced argument, summed over the devices."""
    summed: jax.Array = jax.reshard(z, P(None, None))
    return summed * 2


@pytest.fixture()
def mesh() -> Any:
    with jax.set_mesh(jax.make_mesh((2,), ("x",), axis_types=(AxisType.Explicit,))) as m:
        yield m


def cases() -> list[tuple[jax.stages.Wrapped, tuple[jax.Array, ...]]]:
    x, y = jax.device_put(A, P(None, "x")), jax.device_put(A, P("x", None))
    return [(product, (x, y)), (reduced, (product(x, y),))]


def same_array(got: jax.Array, want: jax.Array) -> None:
    assert got.sharding == want.sharding
    for g, w in zip(got.addressable_shards, want.addressable_shards):
        assert g.device == w.device
        np.testing.assert_allclose(g.data, w.data, rtol=1e-6)


@pytest.mark.usefixtures("mesh")
@pytest.mark.parametrize("index", [0, 1], ids=["unreduced_result", "unreduced_argument"])
def test_jaxport_writes_jax_exports_bytes_with_the_visible_types(index: int) -> None:
    fun, args = cases()[index]
    ours, theirs = jaxport.export(fun)(*args), jax.export.export(fun)(*args)
    assert [str(a) for a in ours.in_avals + ours.out_avals] == [str(a) for a in theirs.in_avals + theirs.out_avals]
    assert any("{U:x}" in str(a) for a in ours.in_avals + ours.out_avals)
    assert bytes(ours.serialize(integrity=False)) == bytes(theirs.serialize())


@pytest.mark.usefixtures("mesh")
@pytest.mark.parametrize("index", [0, 1], ids=["unreduced_result", "unreduced_argument"])
def test_calls_through_the_lowered_types_give_jax_exports_shards(index: int) -> None:
    fun, args = cases()[index]
    blob = jax.export.export(fun)(*args).serialize()
    want = jax.export.deserialize(blob).call(*args)
    same_array(fun(*args), want)
    ours = jaxport.export(fun)(*args)
    for exp in (ours, jaxport.deserialize(blob), jaxport.deserialize(ours.serialize())):
        same_array(exp.call(*args), want)
        same_array(jax.jit(exp.call)(*args), want)


@pytest.mark.usefixtures("mesh")
@pytest.mark.parametrize("index", [0, 1], ids=["unreduced_result", "unreduced_argument"])
def test_their_vjp_is_refused_by_jax_in_both(index: int) -> None:
    fun, args = cases()[index]
    with pytest.raises(Exception, match="unreduced|Unreduced|unexpected JAX type"):
        jax.export.export(fun)(*args).serialize(vjp_order=1)
    with pytest.raises(Exception, match="unreduced|Unreduced|unexpected JAX type"):
        jaxport.export(fun)(*args).serialize(vjp_order=1)
