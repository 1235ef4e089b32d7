"""Where the arguments of a multi-device exported function go, and on which meshes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from jax.sharding import AbstractMesh, Mesh, NamedSharding

from jaxport.domain.errors import DeviceCountError, MeshMismatchError


def for_mesh(shardings: Sequence[Any], mesh: Mesh | AbstractMesh | None) -> tuple[Any, ...]:
    """The recorded named shardings rebuilt over ``mesh`` (None stays None; no mesh: as recorded).

    Raises:
        MeshMismatchError: ``mesh`` has other axis names, sizes or types than
            the mesh the function was exported for.
    """
    result: list[Any] = []
    for sharding in shardings:
        if not isinstance(sharding, NamedSharding):
            result.append(None)
            continue
        if mesh is None:
            result.append(sharding)
            continue
        recorded = sharding.mesh
        given = mesh.abstract_mesh if isinstance(mesh, Mesh) else mesh
        if (tuple(given.axis_names), tuple(given.axis_sizes), tuple(given.axis_types)) != (
                tuple(recorded.axis_names), tuple(recorded.axis_sizes), tuple(recorded.axis_types)):
            raise MeshMismatchError(str(mesh), str(recorded))
        result.append(NamedSharding(mesh, sharding.spec, memory_kind=sharding.memory_kind))
    return tuple(result)


def default_mesh(abstract: AbstractMesh, fun_name: str) -> Mesh:
    """A concrete mesh of the first devices of this process, shaped like ``abstract``.

    Raises:
        DeviceCountError: this process has fewer devices than the mesh needs.
    """
    needed = int(np.prod(abstract.axis_sizes)) if abstract.axis_sizes else 1
    devices = jax.devices()
    if len(devices) < needed:
        raise DeviceCountError(fun_name, needed, len(devices))
    grid = np.array(devices[:needed]).reshape(tuple(abstract.axis_sizes))
    return Mesh(grid, tuple(abstract.axis_names), axis_types=tuple(abstract.axis_types))


def default_placements(shardings: Sequence[Any], fun_name: str) -> tuple[Any, ...]:
    """The recorded shardings over default meshes of this process's devices."""
    meshes: dict[AbstractMesh, Mesh] = {}
    result: list[Any] = []
    for sharding in shardings:
        if not isinstance(sharding, NamedSharding) or not sharding.mesh.axis_names:
            result.append(None)
            continue
        abstract = sharding.mesh
        assert isinstance(abstract, AbstractMesh), "recorded shardings are over abstract meshes"
        if abstract not in meshes:
            meshes[abstract] = default_mesh(abstract, fun_name)
        result.append(NamedSharding(meshes[abstract], sharding.spec, memory_kind=sharding.memory_kind))
    return tuple(result)


def place(leaves: Sequence[Any], placements: Sequence[Any]) -> list[Any]:
    """The leaves on their recorded placements; tracers and placed arrays stay as they are."""
    placed: list[Any] = []
    for leaf, sharding in zip(leaves, placements, strict=True):
        if sharding is None or isinstance(leaf, jax.core.Tracer) or (
                isinstance(leaf, jax.Array) and leaf.sharding.is_equivalent_to(sharding, np.ndim(leaf))):
            placed.append(leaf)
        else:
            placed.append(jax.device_put(leaf, sharding))
    return placed
