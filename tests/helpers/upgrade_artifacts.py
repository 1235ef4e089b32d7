"""Artifacts for the tests of ``jaxport upgrade``: a sharded export on two CPU devices, and the same
export as JAX 0.8.x wrote it (HLO sharding protos, ``serialization_version`` 3, no JAX version).

The HLO-era bytes are jaxport's own writer's, given the records that jax 0.8.x's
``jax.export`` records: each named sharding's ``HloSharding`` (JAX's own
conversion) as a serialized ``OpSharding``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

import jaxport
from jaxport.adapters.flatbuffers.codec import encode_artifact
from jaxport.adapters.jax.internals import named_as_hlo_sharding
from jaxport.adapters.jax.records import jax_sharding
from jaxport.domain.artifact.record import ArtifactRecord
from jaxport.domain.artifact.sharding import HloShardingRecord, NamedShardingRecord

X = np.linspace(-2, 2, 24, dtype=np.float32).reshape(4, 6)


def mesh() -> Mesh:
    """Two CPU devices, one axis ``x``."""
    return Mesh(np.array(jax.devices()[:2]), ("x",))


def f(a: jax.Array) -> tuple[jax.Array, jax.Array]:
    return jnp.sin(a) * 2.0, a.sum(axis=0)


def sharded_export() -> jaxport.Exported:
    """``f`` exported with its input and first output split by rows over :func:`mesh`, the sum replicated."""
    rows, whole = NamedSharding(mesh(), P("x", None)), NamedSharding(mesh(), P())
    return jaxport.export(jax.jit(f, in_shardings=rows, out_shardings=(rows, whole)))(
        jax.ShapeDtypeStruct(X.shape, jnp.float32, sharding=rows))


def placed_x() -> jax.Array:
    """:data:`X` split by rows over :func:`mesh`, as the export's input is."""
    placed: jax.Array = jax.device_put(X, NamedSharding(mesh(), P("x", None)))
    return placed


def hlo_proto(sharding: NamedShardingRecord, ndim: int) -> HloShardingRecord:
    """The HLO sharding proto that jax.export before 2026-01-15 recorded for ``sharding``."""
    return HloShardingRecord(named_as_hlo_sharding(jax_sharding(sharding), ndim).to_proto().SerializeToString())


def hlo_era(record: ArtifactRecord) -> ArtifactRecord:
    """``record`` as jax 0.8.x recorded it: HLO sharding protos, format version 3 and no JAX version."""
    def protos(shardings: tuple[Any, ...], avals: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(hlo_proto(s, len(a.shape)) if isinstance(s, NamedShardingRecord) else s
                     for s, a in zip(shardings, avals))

    return dataclasses.replace(record, in_shardings=protos(record.in_shardings, record.in_avals),
                               out_shardings=protos(record.out_shardings, record.out_avals),
                               serialization_version=3, jax_version=None, producer=None)


def hlo_era_bytes(record: ArtifactRecord) -> bytes:
    """The unsealed bytes of :func:`hlo_era` (``record``)."""
    return bytes(encode_artifact(hlo_era(record)))
