"""Weights as JAX arrays: what a bundle stores of a leaf, and the array made back from it.

The JAX side of :mod:`jaxport.adapters.storage.safetensors_file`, which reads and writes the file
without importing JAX (converters and the IREE loader read weights there).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxport.domain.artifact.record import DType
from jaxport.domain.bundle.manifest import SAFETENSORS_DTYPES, WeightRecord
from jaxport.domain.errors import BundleError
from .records import key_impl_name


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
