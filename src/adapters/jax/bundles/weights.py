"""A bundle's weights as JAX arrays: their key-path names and structure, the functions that take
them, what a bundle stores of each leaf and the array made back from it, and where each goes.

What saving and loading a bundle both check: every function that takes the
weights takes them, with their tree, shapes and dtypes, as its first
argument, and the functions agree on each weight's sharding. The file itself is
:mod:`jaxport.adapters.storage.safetensors_file`'s, which reads and writes it without
importing JAX (converters and the IREE loader read weights there).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh as Mesh  # load_bundle(mesh=...) names the type from here
from jax.sharding import NamedSharding, PartitionSpec

from jaxport.adapters.jax import placement
from jaxport.adapters.jax.exported.exported import Exported
from jaxport.adapters.jax.records import jax_sharding, key_impl_name
from jaxport.adapters.jax.trees.plain import is_library_type, key_of
from jaxport.adapters.jax.trees.registry import PytreeSerializationRegistry, default_registry
from jaxport.domain.artifact.record import DType, TreeKind, TreeSpec
from jaxport.domain.artifact.sharding import NamedShardingRecord, check_shardings_divide
from jaxport.domain.bundle.checks import LeafSpec, agreed_shardings, check_matches_weights
from jaxport.domain.bundle.manifest import SAFETENSORS_DTYPES, Manifest, WeightRecord
from jaxport.domain.leaf_names import weight_name
from jaxport.domain.errors import BundleError, BundleMismatchError



def flatten_params(params: Any) -> tuple[jax.tree_util.PyTreeDef, tuple[str, ...], list[Any]]:
    """The structure of ``params``, each leaf's key-path name and the leaves, in flattening order."""
    with_paths, treedef = jax.tree_util.tree_flatten_with_path(params)
    names = tuple(weight_name([str(key_of(e)) for e in path]) for path, _ in with_paths)
    return treedef, names, [leaf for _, leaf in with_paths]


def refuse_rng_streams(params: Any) -> None:
    """Refuses an NNX RNG stream's key (an ``nnx.RngKey``, found by its class's name; Flax is not imported)
    among the weights: what ``nnx.split(model)`` holds for an ``nnx.Dropout``, which no target converts.

    Raises:
        BundleError: naming the weight and the NNX filter that leaves it out.
    """
    def is_rng_key(x: Any) -> bool:
        return is_library_type(type(x)) and any(c.__name__ == "RngKey" for c in type(x).__mro__)

    for path, leaf in jax.tree_util.tree_flatten_with_path(params, is_leaf=is_rng_key)[0]:
        if is_rng_key(leaf):
            inner = jax.tree_util.tree_flatten_with_path(leaf)[0]
            name = weight_name([str(key_of(e)) for e in (*path, *(inner[0][0] if inner else ()))])
            raise BundleError(
                f"The weight '{name}' is the key of an NNX RNG stream (nnx.RngKey, a PRNG key array): weights "
                "hold no RNG state, and no target converts a function that takes it. Save the parameters "
                "alone: graphdef, params, rest = nnx.split(model, nnx.Param, ...) (or nnx.Param, "
                "nnx.BatchStat, ... with batch statistics; or params = nnx.state(model, nnx.Param)), and "
                "export the function of params that calls nnx.merge(graphdef, params, rest)")


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


def stored_weight(name: str, leaf: Any, what: str = "weight") -> tuple[WeightRecord, np.ndarray]:
    """The record of one weight and its bytes as a host array (a key array: its key data).

    ``what`` names the array in messages (``"weight"``, ``"example's array"``).

    Raises:
        BundleError: the leaf is not an array, or of a dtype a bundle cannot store.
    """
    if not hasattr(leaf, "dtype") or not hasattr(leaf, "shape") or isinstance(leaf, jax.ShapeDtypeStruct):
        raise BundleError(f"The {what} at key path '{name}' is a {type(leaf).__name__}, not an array: "
                          "a bundle stores arrays' values.")
    impl = None
    data = leaf
    if jnp.issubdtype(leaf.dtype, jax.dtypes.prng_key):
        impl = key_impl_name(DType(str(leaf.dtype)))
        data = jax.random.key_data(leaf)
    host = np.asarray(data)
    stored = host.dtype.name
    if stored not in SAFETENSORS_DTYPES:
        raise BundleError(f"The {what} at key path '{name}' has dtype {leaf.dtype}, which a bundle "
                          "cannot store (float16/32/64, bfloat16, float8, ints, bool and PRNG keys can).")
    record = WeightRecord(name, str(leaf.dtype), tuple(int(d) for d in np.shape(leaf)), stored,
                          tuple(host.shape), impl)
    return record, host


def restore_weight(record: WeightRecord, data: np.ndarray, sharding: Any | None) -> Any:
    """A JAX array of the stored data: in place on the default device, or placed by ``sharding``.

    On one CPU device an aligned host array is used without a copy; under a
    sharding over several processes' devices each process reads only the
    slices of its own devices.
    """
    if sharding is None:
        array = jax.device_put(data)
    else:
        shape = data.shape
        array = jax.make_array_from_callback(shape, _data_sharding(sharding, record), lambda idx: data[idx])
    if record.key_impl is not None:
        array = jax.random.wrap_key_data(array, impl=record.key_impl)
    return array


def _data_sharding(sharding: Any, record: WeightRecord) -> Any:
    """The sharding of a key array's data (the key dimensions stay whole)."""
    extra = len(record.data_shape) - len(record.shape)
    if extra == 0:
        return sharding
    spec = tuple(sharding.spec) + (None,) * (len(record.shape) - len(sharding.spec) + extra)
    return jax.sharding.NamedSharding(sharding.mesh, jax.sharding.PartitionSpec(*spec),
                                      memory_kind=sharding.memory_kind)


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
