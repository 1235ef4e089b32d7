"""The runtime port on JAX: an ``Exported`` called eagerly, its weights bound (a bundle's).

A :class:`~jaxport.domain.targets.ports.TargetRuntime` like every converted
target's, so that an artifact or a bundle is called through the same front
(:class:`jaxport.application.conversion.model.ConvertedCall`) with the same
checks and messages. Each call runs the function's ``Exported.call``
eagerly, with JAX's compiled dispatch, the bound weights first, and returns
NumPy arrays (a PRNG key result as its key data).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jax
import numpy as np

from jaxport.domain.converted.manifest import Variant
from jaxport.domain.ports import HostArray


class JaxRuntime:
    """Runs exported functions with JAX on this process's default device.

    Args:
        functions: name -> (its ``Exported``, the weights' leaves it takes
            first: empty for a function that takes none).
    """

    name = "jax"

    def __init__(self, functions: Mapping[str, tuple[Any, Sequence[Any]]]) -> None:
        self._functions = dict(functions)

    def run(self, function: str, variant: Variant, args: Sequence[HostArray]) -> list[HostArray]:
        """The flat results of ``function`` on the caller's flat ``args`` (JAX takes any size: one variant)."""
        exp, weights = self._functions[function]
        call_args, call_kwargs = exp.in_tree.unflatten([*weights, *args])
        results = exp.call(*call_args, **call_kwargs)
        return [_host(leaf) for leaf in jax.tree.leaves(results)]


def _host(leaf: Any) -> Any:
    """A result as a NumPy array (a PRNG key array: its key data)."""
    if jax.numpy.issubdtype(leaf.dtype, jax.dtypes.prng_key):
        leaf = jax.random.key_data(leaf)
    return np.asarray(leaf)
