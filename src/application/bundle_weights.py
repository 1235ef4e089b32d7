"""What saving and loading bundles share: functions checked against weights, and where weights go."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jax
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from ..adapters.jax_params import flatten_params, leaf_specs
from ..adapters.jax_records import jax_sharding
from ..domain.artifact import NamedShardingRecord, TreeKind, TreeSpec
from ..domain.bundle_checks import LeafSpec, agreed_shardings, check_matches_weights
from ..domain.bundle_manifest import WeightRecord
from ..domain.call_checks import check_shardings_divide
from ..domain.errors import BundleError, BundleMismatchError
from . import placement
from .exported import Exported
from .pytree_registry import PytreeSerializationRegistry


def tree_spec(registry: PytreeSerializationRegistry, treedef: jax.tree_util.PyTreeDef) -> TreeSpec:
    """The serializable structure of the weights.

    Raises:
        BundleError: the pytree holds a node type not registered for serialization, or a dict
            with a key that is not a string (the message names its key path).
    """
    try:
        return registry.to_spec(treedef, where="params")
    except (ValueError, TypeError) as exc:
        raise BundleError(f"The weights' pytree cannot be saved: {exc}") from exc


def check_function(name: str, exp: Exported, weights_tree: TreeSpec, weights: Sequence[WeightRecord]
                   ) -> tuple[NamedShardingRecord | None, ...]:
    """Checks that ``exp`` takes the weights first; returns the shardings it records for them.

    Raises:
        BundleMismatchError: naming the function and the key path.
    """
    record = exp.record
    args = record.in_tree.children[0]
    if args.kind is not TreeKind.TUPLE or not args.children:
        raise BundleMismatchError(name, "", "the function takes no positional argument; export it "
                                  "with the weights as its first argument, or list it in without_params")
    first = args.children[0]
    count = first.num_leaves
    check_matches_weights(name, weights_tree, weights, first,
                          [LeafSpec.of(a) for a in record.in_avals[:count]])
    return tuple(s if isinstance(s, NamedShardingRecord) else None for s in record.in_shardings[:count])


def weight_shardings(functions: Mapping[str, Exported], takes_params: Mapping[str, bool],
                     weights_tree: TreeSpec, weights: Sequence[WeightRecord]
                     ) -> tuple[NamedShardingRecord | None, ...]:
    """The sharding recorded for each weight, after checking every function that takes the weights.

    Raises:
        BundleMismatchError: a function's first argument differs from the
            weights, or two functions record different shardings for a weight.
        ShardingMismatchError: a weight's shape does not split as its sharding says.
        ValueError, NonStringKeyError: an in-process function's pytrees hold
            what the artifact format cannot (see :meth:`Exported.serialize`).
    """
    per_function = {name: check_function(name, exp, weights_tree, weights)
                    for name, exp in functions.items() if takes_params[name]}
    agreed = agreed_shardings(weights, per_function)
    check_shardings_divide([w.shape for w in weights], agreed, [w.name for w in weights])
    return agreed


def placements(shardings: Sequence[NamedShardingRecord | None], mesh: Mesh | None) -> tuple[Any, ...]:
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


def checked_leaves(weights_tree: TreeSpec, weights: Sequence[WeightRecord], params: Any,
                   registry: PytreeSerializationRegistry) -> list[Any]:
    """The leaves of new weights, after checking them against the bundle's weights.

    Raises:
        BundleMismatchError: naming the key path where they differ.
    """
    treedef, _, leaves = flatten_params(params)
    check_matches_weights(None, weights_tree, weights, tree_spec(registry, treedef), leaf_specs(leaves))
    return leaves


def place_leaves(leaves: Sequence[Any], where: Sequence[Any]) -> list[Any]:
    """Each leaf as a JAX array on its placement (None: the default device)."""
    return [x if isinstance(x, jax.Array) and (s is None or x.sharding == s) else jax.device_put(x, s)
            for x, s in zip(leaves, where, strict=True)]
