"""Weights pytrees <-> what a bundle stores: key-path names, host arrays, placed JAX arrays."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..domain.artifact import DType
from ..domain.bundle_checks import LeafSpec
from ..domain.bundle_manifest import WeightRecord
from ..domain.bundle_names import weight_name
from ..domain.errors import BundleError
from .jax_records import key_impl_name
from .safetensors_file import stored_dtype_name


def entry_text(entry: Any) -> str:
    """One of JAX's key-path entries as text: a dict key, an index, a field name."""
    for attr in ("key", "idx", "name"):
        if hasattr(entry, attr):
            return str(getattr(entry, attr))
    return str(entry)


def flatten_params(params: Any) -> tuple[jax.tree_util.PyTreeDef, tuple[str, ...], list[Any]]:
    """The structure of ``params``, each leaf's key-path name and the leaves, in flattening order."""
    with_paths, treedef = jax.tree_util.tree_flatten_with_path(params)
    names = tuple(weight_name([entry_text(e) for e in path]) for path, _ in with_paths)
    return treedef, names, [leaf for _, leaf in with_paths]


def _is_key(dtype: Any) -> bool:
    return bool(jnp.issubdtype(dtype, jax.dtypes.prng_key))


def stored_weight(name: str, leaf: Any) -> tuple[WeightRecord, np.ndarray]:
    """The record of one weight and its bytes as a host array (a key array: its key data).

    Raises:
        BundleError: the leaf is not an array, or of a dtype a bundle cannot store.
    """
    if not hasattr(leaf, "dtype") or not hasattr(leaf, "shape") or isinstance(leaf, jax.ShapeDtypeStruct):
        raise BundleError(f"The weight at key path '{name}' is a {type(leaf).__name__}, not an array: "
                          "a bundle stores the weights' values.")
    impl = None
    data = leaf
    if _is_key(leaf.dtype):
        impl = key_impl_name(DType(str(leaf.dtype)))
        data = jax.random.key_data(leaf)
    host = np.asarray(data)
    stored = stored_dtype_name(host.dtype)
    if stored is None:
        raise BundleError(f"The weight at key path '{name}' has dtype {leaf.dtype}, which a bundle "
                          "cannot store (float16/32/64, bfloat16, float8, ints, bool and PRNG keys can).")
    record = WeightRecord(name, str(leaf.dtype), tuple(int(d) for d in np.shape(leaf)), stored,
                          tuple(host.shape), impl)
    return record, host


def leaf_spec(leaf: Any) -> LeafSpec:
    """The shape and dtype of an array, a ``ShapeDtypeStruct`` or an abstract value."""
    dims = leaf.shape if hasattr(leaf, "shape") else np.shape(leaf)
    dtype = leaf.dtype if hasattr(leaf, "dtype") else np.asarray(leaf).dtype
    return LeafSpec(tuple(d if isinstance(d, int) else str(d) for d in dims), str(dtype))


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


def leaf_specs(leaves: Sequence[Any]) -> tuple[LeafSpec, ...]:
    """The specs of several leaves."""
    return tuple(leaf_spec(x) for x in leaves)
