"""HLO sharding protos mapped onto named shardings (:mod:`jaxport.domain.artifact.op_sharding`) put
the same slices on the same devices as the HLO sharding JAX makes of the original named sharding."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from jaxport.adapters.jax.internals import named_as_hlo_sharding
from jaxport.adapters.jax.records import jax_sharding
from jaxport.domain.artifact.op_sharding import as_named_sharding, read_op_sharding
from jaxport.domain.artifact.sharding import AbstractMeshRecord, AxisType

CASES = [
    ((2, 4), ("x", "y"), P("x", "y")), ((2, 4), ("x", "y"), P("y", "x")), ((2, 4), ("x", "y"), P(("y", "x"), None)),
    ((2, 4), ("x", "y"), P("y")), ((2, 4), ("x", "y"), P(None, "x")), ((2, 2, 2), ("a", "b", "c"), P(("c", "a"), "b")),
    ((2, 2, 2), ("a", "b", "c"), P("c")), ((8,), ("x",), P(None, "x")), ((2, 4), ("x", "y"), P()),
    ((4, 2), ("x", "y"), P(("y", "x"))), ((2,), ("x",), P("x", None)),
]


def slices(sharding: Any, shape: tuple[int, ...]) -> dict[int, tuple[Any, ...]]:
    return {d.id: tuple(s.indices(n)[:2] for s, n in zip(index, shape))
            for d, index in sharding.devices_indices_map(shape).items()}


def original_and_proto(sizes: tuple[int, ...], names: tuple[str, ...], spec: P) -> tuple[NamedSharding, bytes]:
    """A named sharding over the first CPU devices, and the HLO sharding proto JAX makes of it."""
    devices = jax.devices()[:int(np.prod(sizes))]
    original = NamedSharding(Mesh(np.array(devices).reshape(sizes), names), spec)
    return original, named_as_hlo_sharding(original, 2).to_proto().SerializeToString()


@pytest.mark.parametrize(("sizes", "names", "spec"), CASES, ids=lambda v: str(v))
def test_a_proto_of_a_named_sharding_maps_back_onto_one_with_the_same_slices_per_device(
        sizes: tuple[int, ...], names: tuple[str, ...], spec: P) -> None:
    original, proto = original_and_proto(sizes, names, spec)
    devices = list(original.mesh.devices.flat)
    record = as_named_sharding(read_op_sharding(proto), 2)
    mapped = jax_sharding(record)
    count = int(np.prod(record.mesh.axis_sizes))
    concrete = NamedSharding(Mesh(np.array(devices[:count]).reshape(record.mesh.axis_sizes), record.mesh.axis_names),
                             mapped.spec)
    shape = (8, 16)
    want = slices(original, shape)
    got = slices(concrete, shape)
    whole = tuple((0, n) for n in shape)
    assert {d: got.get(d, whole) for d in want} == want  # a replicated mapping holds it all on one device


@pytest.mark.parametrize(("sizes", "names", "spec"), CASES, ids=lambda v: str(v))
def test_over_the_exporters_mesh_the_mapping_gives_back_the_original_sharding(
        sizes: tuple[int, ...], names: tuple[str, ...], spec: P) -> None:
    original, proto = original_and_proto(sizes, names, spec)
    mesh = AbstractMeshRecord(sizes, names, (AxisType.AUTO,) * len(sizes))
    record = as_named_sharding(read_op_sharding(proto), 2, mesh)
    assert record.mesh == mesh
    mapped = NamedSharding(original.mesh, jax_sharding(record).spec)
    assert slices(mapped, (8, 16)) == slices(original, (8, 16))
