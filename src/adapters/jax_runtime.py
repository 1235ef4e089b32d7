"""The runtime port on JAX: a record called eagerly through ``Exported.call``.

The record becomes an ``Exported`` once (through the loader the
application hands in: jaxport's own deserialization) and is cached per
record; each call runs that ``Exported`` eagerly, with JAX's compiled
dispatch, and returns NumPy arrays (a PRNG key result as its key data).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import numpy as np

from ..domain.artifact import ArtifactRecord
from ..domain.runtime import HostArray


class JaxRuntime:
    """Runs exported functions with JAX on this process's default device.

    Args:
        load: makes the ``Exported`` of a record (``jaxport.Exported`` itself,
            with the default pytree registry).
    """

    name = "jax"

    def __init__(self, load: Callable[[ArtifactRecord], Any]) -> None:
        self._load = load
        self._lock = threading.Lock()
        # Keyed by identity (a record's hash covers its whole module); the
        # value keeps the record alive, so its id is not reused.
        self._exported: dict[int, tuple[ArtifactRecord, Any]] = {}

    def exported(self, function: ArtifactRecord) -> Any:
        """The ``Exported`` of ``function``, made on first use."""
        entry = self._exported.get(id(function))
        if entry is None or entry[0] is not function:
            with self._lock:
                entry = (function, self._load(function))
                self._exported[id(function)] = entry
        return entry[1]

    def run(self, function: ArtifactRecord, args: Sequence[HostArray],
            dims: Mapping[str, int]) -> list[HostArray]:
        """The flat results of ``function`` on ``args`` (``dims`` is not needed: JAX solves them)."""
        exp = self.exported(function)
        call_args, call_kwargs = exp.in_tree.unflatten(list(args))
        results = exp.call(*call_args, **call_kwargs)
        return [_host(leaf) for leaf in jax.tree.leaves(results)]


def _host(leaf: Any) -> Any:
    """A result as a NumPy array (a PRNG key array: its key data)."""
    if jax.numpy.issubdtype(leaf.dtype, jax.dtypes.prng_key):
        leaf = jax.random.key_data(leaf)
    return np.asarray(leaf)
