"""Where a bundle's weights go: on a mesh, on this process's first devices, or on the default device."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from jaxport.adapters.jax.records import jax_sharding
from jaxport.domain.artifact.sharding import NamedShardingRecord
from jaxport.domain.bundle.manifest import Manifest
from jaxport.domain.bundle.checks import check_matches_weights
from jaxport.application.export import placement
from .weights import flatten_params, leaf_spec, weights_tree_spec
from jaxport.application.wiring import default_registry


def weight_placements(shardings: Sequence[NamedShardingRecord | None], mesh: Mesh | None) -> tuple[Any, ...]:
    """Where each weight goes: its recorded sharding over ``mesh`` (replicated over ``mesh``
    where none is recorded), or, without a mesh, over this process's first devices (None: the
    default device).

    Raises:
        MeshMismatchError: ``mesh``'s axes differ from the recorded mesh's.
        DeviceCountError: without a mesh, this process has too few devices.
    """
    recorded = [jax_sharding(s) for s in shardings]
    if mesh is not None:
        return tuple(NamedSharding(mesh, PartitionSpec()) if s is None else placement.for_mesh([s], mesh)[0]
                     for s in recorded)
    if all(s is None for s in recorded):
        return (None,) * len(recorded)
    return placement.default_placements(recorded, "load_bundle")


def placed_leaves(manifest: Manifest, params: Any, where: Sequence[Any]) -> list[Any]:
    """The leaves of new weights, checked against the bundle's weights, each as a JAX array on
    its placement (None: the default device).

    Raises:
        BundleMismatchError: naming the key path where they differ.
    """
    treedef, _, leaves = flatten_params(params)
    check_matches_weights(None, manifest.params_tree, manifest.weights, weights_tree_spec(default_registry(), treedef),
                          [leaf_spec(x) for x in leaves])
    return [x if isinstance(x, jax.Array) and (s is None or x.sharding == s) else jax.device_put(x, s)
            for x, s in zip(leaves, where, strict=True)]
