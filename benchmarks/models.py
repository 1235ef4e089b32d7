"""The functions the benchmarks export and call.

Every factory returns a *fresh* function object on each :meth:`make`, so that
JAX's trace and lowering caches (keyed by the function object) never hit
between benchmark rounds: each round pays for a full trace and lowering, as a
first export of a new function does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

FEATURES = 16
BATCH = 8
# One layer `tanh(x @ W[i] + b[i])` lowers to 9 StableHLO operations (two
# slices, two reshapes, two broadcast_in_dim, dot_general, add, tanh), plus two
# constants for the whole model: 222 layers give 2,000 and 2,222 give 20,000.
LAYERS_2K = 222
LAYERS_20K = 2222

Array = jax.Array
Fun = Callable[[Array], Array]


@dataclass(frozen=True)
class MlpFactory:
    """Makes ``x -> tanh(x @ W[i] + b[i])`` for ``layers`` layers, fresh each time.

    The weights are closed over (so they become module constants), created
    once per factory and shared by all the functions it makes.
    """

    layers: int
    weights: Array
    biases: Array

    @classmethod
    def with_layers(cls, layers: int, seed: int = 0) -> MlpFactory:
        """A factory with reproducible random weights of scale 0.1."""
        rng = np.random.default_rng(seed)
        w = rng.standard_normal((layers, FEATURES, FEATURES), dtype=np.float32) * 0.1
        b = rng.standard_normal((layers, FEATURES), dtype=np.float32) * 0.1
        return cls(layers, jnp.asarray(w), jnp.asarray(b))

    def make(self) -> Fun:
        """A new function object computing the MLP."""
        layers, weights, biases = self.layers, self.weights, self.biases

        def mlp(x: Array) -> Array:
            for i in range(layers):
                x = jnp.tanh(x @ weights[i] + biases[i])
            return x

        return mlp


@dataclass(frozen=True)
class SinMatmulFactory:
    """Makes the small function ``x -> sin(x) @ W`` (one 16x16 weight)."""

    weight: Array

    @classmethod
    def create(cls, seed: int = 0) -> SinMatmulFactory:
        rng = np.random.default_rng(seed)
        return cls(jnp.asarray(rng.standard_normal((FEATURES, FEATURES), dtype=np.float32)))

    def make(self) -> Fun:
        """A new function object computing ``sin(x) @ W``."""
        weight = self.weight

        def sin_matmul(x: Array) -> Array:
            return jnp.sin(x) @ weight

        return sin_matmul


def input_spec() -> jax.ShapeDtypeStruct:
    """The abstract input of every benchmarked function: f32[8, 16]."""
    return jax.ShapeDtypeStruct((BATCH, FEATURES), jnp.float32)


def input_array(seed: int = 1) -> Array:
    """A concrete input, already on the default device."""
    rng = np.random.default_rng(seed)
    x: Array = jax.device_put(rng.standard_normal((BATCH, FEATURES), dtype=np.float32))
    return x.block_until_ready()


def count_stablehlo_ops(lowered: Any) -> int:
    """The number of ``stablehlo.*`` operations in a ``jax.stages.Lowered``."""
    module = lowered.compiler_ir("stablehlo")
    count = 0
    pending: list[Any] = [module.operation]
    while pending:
        op = pending.pop()
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    if inner.operation.name.startswith("stablehlo."):
                        count += 1
                    pending.append(inner.operation)
    return count
