"""Sharded exports on 8 CPU devices: export, serialize, load and run on a mesh."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

import jaxport
from jaxport.errors import DeviceCountError, MeshMismatchError, ShardingMismatchError

pytestmark = pytest.mark.skipif(jax.device_count() < 8, reason="needs 8 devices (tests/helpers/jax_setup.py)")


def mesh_2x4() -> Mesh:
    return Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("data", "model"))


def mesh_8() -> Mesh:
    return Mesh(np.array(jax.devices()[:8]), ("data",))


def arr(*shape: int) -> Any:
    return (np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) % 7) / 7


@dataclass(frozen=True)
class Case:
    name: str
    make: Callable[[], tuple[Any, tuple[Any, ...]]]  # (jitted function, arguments)
    poly: tuple[str | None, ...] | None = None


def data_parallel() -> tuple[Any, tuple[Any, ...]]:
    m = mesh_8()
    f = jax.jit(lambda x, w: jnp.tanh(x @ w), in_shardings=(NamedSharding(m, P("data")), NamedSharding(m, P())),
                out_shardings=NamedSharding(m, P("data")))
    return f, (arr(16, 4), arr(4, 3))


def model_parallel_matmul() -> tuple[Any, tuple[Any, ...]]:
    m = mesh_2x4()
    f = jax.jit(lambda x, w: x @ w, in_shardings=(NamedSharding(m, P("data", None)), NamedSharding(m, P(None, "model"))),
                out_shardings=NamedSharding(m, P("data", "model")))
    return f, (arr(4, 6), arr(6, 8))


def replicated_output() -> tuple[Any, tuple[Any, ...]]:
    m = mesh_2x4()
    f = jax.jit(lambda x: jnp.sum(x, axis=0), in_shardings=NamedSharding(m, P("data", "model")),
                out_shardings=NamedSharding(m, P()))
    return f, (arr(4, 8),)


def shard_map_psum() -> tuple[Any, tuple[Any, ...]]:
    m = mesh_8()

    @partial(jax.shard_map, mesh=m, in_specs=P("data"), out_specs=P())
    def total(x: Any) -> Any:
        return jax.lax.psum(jnp.sum(x, keepdims=True), "data")

    f = jax.jit(total, in_shardings=NamedSharding(m, P("data")), out_shardings=NamedSharding(m, P()))
    return f, (arr(16),)


def mixed_inputs() -> tuple[Any, tuple[Any, ...]]:
    m = mesh_2x4()
    f = jax.jit(lambda x, b, s: x * s + b,
                in_shardings=(NamedSharding(m, P("data", "model")), NamedSharding(m, P(None, "model")),
                              NamedSharding(m, P())),
                out_shardings=NamedSharding(m, P("data", "model")))
    return f, (arr(4, 8), arr(1, 8), np.float32(3))


def all_gather_output() -> tuple[Any, tuple[Any, ...]]:
    m = mesh_8()

    @partial(jax.shard_map, mesh=m, in_specs=P("data"), out_specs=P(), check_vma=False)
    def gather(x: Any) -> Any:
        return jax.lax.all_gather(x * 2, "data", tiled=True)

    f = jax.jit(gather, in_shardings=NamedSharding(m, P("data")), out_shardings=NamedSharding(m, P()))
    return f, (arr(8),)


def ppermute_ring() -> tuple[Any, tuple[Any, ...]]:
    m = mesh_8()

    @partial(jax.shard_map, mesh=m, in_specs=P("data"), out_specs=P("data"))
    def shift(x: Any) -> Any:
        return jax.lax.ppermute(x, "data", [(i, (i + 1) % 8) for i in range(8)])

    f = jax.jit(shift, in_shardings=NamedSharding(m, P("data")), out_shardings=NamedSharding(m, P("data")))
    return f, (arr(16),)


def symbolic_batch() -> tuple[Any, tuple[Any, ...]]:
    m = mesh_8()
    f = jax.jit(lambda x: jnp.sin(x) * 2, in_shardings=NamedSharding(m, P("data", None)),
                out_shardings=NamedSharding(m, P("data", None)))
    return f, (arr(16, 3),)


CASES = [
    Case("data_parallel", data_parallel),
    Case("model_parallel_matmul_2x4", model_parallel_matmul),
    Case("replicated_output", replicated_output),
    Case("shard_map_psum", shard_map_psum),
    Case("mixed_sharded_and_replicated", mixed_inputs),
    Case("shard_map_all_gather", all_gather_output),
    Case("shard_map_ppermute", ppermute_ring),
    Case("symbolic_batch_over_data", symbolic_batch, poly=("8*b, 3",)),
]


def specs(case: Case, args: tuple[Any, ...]) -> tuple[Any, ...]:
    if case.poly is None:
        return args
    return tuple(jaxport.symbolic_args_specs(args, case.poly))


def assert_same_sharding(got: Any, want: Any, ndim: int) -> None:
    assert got.is_equivalent_to(want, ndim), f"{got} is not {want}"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_sharded_function_exports_loads_and_runs_on_its_mesh(case: Case) -> None:
    f, args = case.make()
    exp = jaxport.export(f)(*specs(case, args))
    assert exp.nr_devices == 8
    loaded = jaxport.deserialize(exp.serialize())
    assert [str(s) for s in loaded.in_shardings] == [str(s) for s in exp.in_shardings]
    assert [str(s) for s in loaded.out_shardings] == [str(s) for s in exp.out_shardings]
    want = f(*args)
    mesh = want.sharding.mesh
    # As with jax.export, the arguments come placed on the devices, eagerly and under jit.
    placed = [jax.device_put(a, s) for a, s in zip(args, loaded.in_shardings_jax(mesh))]
    for runner in (loaded.call, jax.jit(loaded.call)):
        got = runner(*placed)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        assert_same_sharding(got.sharding, loaded.out_shardings_jax(mesh)[0], got.ndim)


def test_an_eager_call_on_one_device_fails_as_in_jax_export() -> None:
    f, args = data_parallel()
    message = "Function .* was exported for 8 devices and is called in a context with 1 devices"
    with pytest.raises(DeviceCountError, match=message):
        jaxport.export(f)(*args).call(*args)
    with pytest.raises(ValueError, match=message):
        jax.export.export(f)(*args).call(*args)


@pytest.mark.parametrize("case", CASES[:5], ids=lambda c: c.name)
def test_jaxports_sharded_artifacts_run_through_jax_export_and_back(case: Case) -> None:
    f, args = case.make()
    ours = jaxport.export(f)(*specs(case, args))
    theirs = jax.export.export(f)(*specs(case, args))
    want = f(*args)
    mesh = want.sharding.mesh
    placed = [jax.device_put(a, s) for a, s in zip(args, ours.in_shardings_jax(mesh))]
    np.testing.assert_allclose(jax.export.deserialize(ours.serialize()).call(*placed), want, rtol=1e-5)
    np.testing.assert_allclose(jaxport.deserialize(theirs.serialize()).call(*placed), want, rtol=1e-5)
    assert [str(s) for s in jaxport.deserialize(theirs.serialize()).in_shardings] == \
        [str(s) for s in theirs._in_named_shardings]


def partly_sharded() -> tuple[Any, tuple[Any, ...]]:
    m = mesh_2x4()
    f = jax.jit(lambda x, w, z: (x @ w, z * 2),
                in_shardings=(NamedSharding(m, P("data", None)), NamedSharding(m, P(None, "model")), None),
                out_shardings=(NamedSharding(m, P("data", "model")), None))
    return f, (arr(4, 6), arr(6, 8), arr(3))


@pytest.mark.parametrize("make", [partly_sharded, *(c.make for c in CASES[:5])],
                         ids=["partly_sharded", *(c.name for c in CASES[:5])])
def test_hlo_shardings_are_those_jax_export_reads_from_the_artifact(make: Callable[[], Any]) -> None:
    f, args = make()
    ours = jaxport.export(f)(*args)
    theirs = jax.export.deserialize(jax.export.export(f)(*args).serialize())
    # JAX 0.11.2 and later no longer use the HLO shardings: all None (older: the named ones' HLO).
    if tuple(int(p) for p in jax.__version__.split(".")[:3]) >= (0, 11, 2):
        assert all(s is None for s in (*theirs.in_shardings_hlo, *theirs.out_shardings_hlo))
    else:
        assert any(s is not None for s in theirs.in_shardings_hlo)
    for exp in (ours, jaxport.deserialize(ours.serialize()), jaxport.deserialize(theirs.serialize())):
        assert exp.in_shardings_hlo == tuple(theirs.in_shardings_hlo)
        assert exp.out_shardings_hlo == tuple(theirs.out_shardings_hlo)
    read_by_jax = jax.export.deserialize(ours.serialize())
    assert ours.in_shardings_hlo == tuple(read_by_jax.in_shardings_hlo)
    assert ours.out_shardings_hlo == tuple(read_by_jax.out_shardings_hlo)


def test_memory_kinds_round_trip() -> None:
    m = mesh_8()
    sharding = NamedSharding(m, P("data"), memory_kind="device")
    f = jax.jit(lambda x: x + 1, in_shardings=sharding, out_shardings=sharding)
    exp = jaxport.export(f)(jax.ShapeDtypeStruct((8,), jnp.float32))
    loaded = jaxport.deserialize(exp.serialize())
    assert loaded.in_shardings[0].memory_kind == "device"
    theirs: Any = jax.export.deserialize(exp.serialize())._in_named_shardings[0]
    assert theirs.memory_kind == "device"


def test_a_wrong_device_count_names_both_counts() -> None:
    f, args = data_parallel()
    exp = jaxport.export(f)(*args)
    four = Mesh(np.array(jax.devices()[:4]), ("data",))
    with pytest.raises(DeviceCountError, match="exported for 8 devices and is called in a context with 4 devices"):
        jax.jit(exp.call, in_shardings=(NamedSharding(four, P("data")), NamedSharding(four, P())))(*args)


def test_a_mesh_with_other_axis_names_is_refused() -> None:
    f, args = model_parallel_matmul()
    exp = jaxport.export(f)(*args)
    other = Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("rows", "cols"))
    with pytest.raises(MeshMismatchError, match=r"does not match the mesh used for export"):
        exp.in_shardings_jax(other)


def test_a_sharding_that_does_not_divide_a_dimension_is_refused() -> None:
    f, args = symbolic_batch()
    exp = jaxport.export(f)(*specs(CASES[-1], args))
    with pytest.raises(ShardingMismatchError, match=r"args\[0\].*dimension 0.*size 12.*not divisible by 8"):
        exp.call(arr(12, 3))


def test_a_single_device_artifact_without_shardings_runs_in_an_8_device_context() -> None:
    exp = jaxport.export(jnp.sin)(jax.ShapeDtypeStruct((8,), jnp.float32))
    assert exp.nr_devices == 1
    s = NamedSharding(mesh_8(), P("data"))
    x = jax.device_put(arr(8), s)
    np.testing.assert_allclose(jax.jit(exp.call, in_shardings=s, out_shardings=s)(x), np.sin(arr(8)), rtol=1e-6)


def test_the_vjp_of_a_sharded_export_keeps_the_primals_shardings_and_differentiates() -> None:
    f, args = data_parallel()
    loss = jax.jit(lambda x, w: jnp.sum(f(x, w) ** 2))
    exp = jaxport.export(f)(*args)
    vjp = exp.vjp()
    assert vjp.nr_devices == 8
    assert [str(s) for s in vjp.out_shardings] == [str(s) for s in exp.in_shardings]
    want = jax.grad(loss, argnums=1)(*args)
    loaded = jaxport.deserialize(exp.serialize(vjp_order=1))
    placed = [jax.device_put(a, s) for a, s in zip(args, loaded.in_shardings_jax(mesh_8()))]
    got = jax.grad(lambda x, w: jnp.sum(loaded.call(x, w) ** 2), argnums=1)(*placed)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


ALL_MAKES = [partly_sharded, *(c.make for c in CASES)]
ALL_IDS = ["partly_sharded", *(c.name for c in CASES)]


@pytest.mark.parametrize("make", ALL_MAKES, ids=ALL_IDS)
def test_a_sharded_export_serializes_to_jax_exports_bytes(make: Callable[[], Any]) -> None:
    """The meshes and named shardings (and, on JAX 0.11.2+, their unique tables) as jax.export writes them."""
    f, args = make()
    ours = jaxport.export(f)(*args).serialize(integrity=False)
    assert bytes(ours) == bytes(jax.export.export(f)(*args).serialize())


def _meshes(exp: Any) -> list[Any]:
    named = (*exp._in_named_shardings, *exp._out_named_shardings)
    return sorted({s.mesh for s in named if s is not None and s.mesh.axis_names}, key=str)


@pytest.mark.parametrize("make", ALL_MAKES, ids=ALL_IDS)
def test_the_shardings_over_a_mesh_are_jax_exports(make: Callable[[], Any]) -> None:
    f, args = make()
    ours, theirs = jaxport.export(f)(*args), jax.export.export(f)(*args)
    pairs = [(ours, theirs), (jaxport.deserialize(ours.serialize()), jax.export.deserialize(theirs.serialize()))]
    for abstract in _meshes(theirs):
        size = int(np.prod(abstract.axis_sizes))
        concrete = Mesh(np.array(jax.devices()[:size]).reshape(abstract.axis_sizes), abstract.axis_names,
                        axis_types=abstract.axis_types)
        for mesh in (concrete, abstract):
            for a, b in pairs:
                assert [str(s) for s in a.in_shardings_jax(mesh)] == [str(s) for s in b.in_shardings_jax(mesh)]
                assert [str(s) for s in a.out_shardings_jax(mesh)] == [str(s) for s in b.out_shardings_jax(mesh)]
    # Without a mesh (JAX 0.12 allows it): the recorded shardings over their abstract meshes.
    assert [str(s) for s in ours.in_shardings_jax()] == [str(s) for s in theirs._in_named_shardings]
