"""A bundle's weights: their key-path names and structure, and the functions that take them.

What saving and loading a bundle both check: every function that takes the
weights takes them, with their tree, shapes and dtypes, as its first
argument, and the functions agree on each weight's sharding.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jax
import numpy as np

from jaxport.domain.artifact.record import TreeKind, TreeSpec
from jaxport.domain.artifact.sharding import NamedShardingRecord
from jaxport.domain.bundle.manifest import WeightRecord
from jaxport.domain.bundle.checks import LeafSpec, agreed_shardings, check_matches_weights
from jaxport.domain.bundle.names import weight_name
from jaxport.domain.calls.checks import check_shardings_divide
from jaxport.domain.errors import BundleError, BundleMismatchError
from jaxport.application.export.exported import Exported
from jaxport.application.pytree_registry import PytreeSerializationRegistry


def _entry_text(entry: Any) -> str:
    """One of JAX's key-path entries as text: a dict key, an index, a field name."""
    for attr in ("key", "idx", "name"):
        if hasattr(entry, attr):
            return str(getattr(entry, attr))
    return str(entry)


def flatten_params(params: Any) -> tuple[jax.tree_util.PyTreeDef, tuple[str, ...], list[Any]]:
    """The structure of ``params``, each leaf's key-path name and the leaves, in flattening order."""
    with_paths, treedef = jax.tree_util.tree_flatten_with_path(params)
    names = tuple(weight_name([_entry_text(e) for e in path]) for path, _ in with_paths)
    return treedef, names, [leaf for _, leaf in with_paths]


def leaf_spec(leaf: Any) -> LeafSpec:
    """The shape and dtype of an array, a ``ShapeDtypeStruct`` or an abstract value."""
    dims = leaf.shape if hasattr(leaf, "shape") else np.shape(leaf)
    dtype = leaf.dtype if hasattr(leaf, "dtype") else np.asarray(leaf).dtype
    return LeafSpec(tuple(d if isinstance(d, int) else str(d) for d in dims), str(dtype))


def weights_tree_spec(registry: PytreeSerializationRegistry, treedef: jax.tree_util.PyTreeDef) -> TreeSpec:
    """The serializable structure of the weights.

    Raises:
        BundleError: the pytree holds a node type not registered for serialization, or a dict
            with a key that is not a string (the message names its key path).
    """
    try:
        return registry.to_spec(treedef, where="params")
    except (ValueError, TypeError) as exc:
        raise BundleError(f"The weights' pytree cannot be saved: {exc}") from exc


def _check_function(name: str, exp: Exported, weights_tree: TreeSpec, weights: Sequence[WeightRecord]
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
    check_matches_weights(name, weights_tree, weights, first, [LeafSpec.of(a) for a in record.in_avals[:count]])
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
    per_function = {name: _check_function(name, exp, weights_tree, weights)
                    for name, exp in functions.items() if takes_params[name]}
    agreed = agreed_shardings(weights, per_function)
    check_shardings_divide([w.shape for w in weights], agreed, [w.name for w in weights])
    return agreed
