"""Lowering a loaded artifact under ``jax.jit``, jaxport next to jax.export.

Groups (kind ``"artifact"``; the report shows both medians and jaxport /
jax.export):

* ``first jit(exp.call) lowering``: ``jax.jit(exp.call).trace(x).lower()`` of
  an artifact just deserialized (the deserialization is set-up, not timed):
  the module is deserialized and merged into the caller's;
* ``another shape's lowering``: the same for a second batch size of a
  polymorphic artifact that was already lowered once; jaxport parses the
  module once per artifact and keeps it as plain MLIR bytecode, jax.export
  deserializes the portable artifact again.

The models are the MLPs of about 2,000 and 20,000 StableHLO operations; the
two roles alternate in ``CHUNKS`` chunks in this process.

The first lowering has a floor that neither can go below: both must
deserialize the portable artifact (VHLO bytecode, upgraded to this jaxlib's
StableHLO) in the caller's MLIR context, and both pay jit's own work around
the call (a new MLIR context, tracing, merging, verifying the merged module
and running ``sdy-lift-inlined-meshes`` on it), so its ratio cannot fall far below 1.
jax.export runs that pass on the callee too, before merging it; jaxport does
not. For a polymorphic artifact, jaxport's first lowering also writes the
module once as plain MLIR bytecode, which is what makes the second group's
later lowerings cheaper; an artifact of static shapes (this group's) writes
it at its second lowering, if one comes (see ``jaxport.adapters.mlir.callee``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from jax import export as jax_export
from pytest_benchmark.fixture import BenchmarkFixture

import jaxport

from .conftest import PEERS, Label, Role, alternating_chunks
from .models import FEATURES, LAYERS_2K, LAYERS_20K, LAYERS_POLY_2K, MlpFactory, input_spec

# Rounds per chunk; the roles alternate in CHUNKS chunks so that a burst of
# load from another process does not stretch one role's rounds only.
SIZES = {"2k ops": (LAYERS_2K, LAYERS_POLY_2K, 2), "20k ops": (LAYERS_20K, None, 1)}
CHUNKS = 3
READERS: dict[Role, Callable[[bytes], Any]] = {
    "jaxport": jaxport.deserialize,
    "jax.export": lambda blob: jax_export.deserialize(bytearray(blob)),
}


@pytest.fixture(scope="module", params=list(SIZES))
def blobs(request: pytest.FixtureRequest) -> tuple[str, bytes, bytes | None, int]:
    layers, poly_layers, rounds = SIZES[request.param]
    static = bytes(jaxport.export(jax.jit(MlpFactory.with_layers(layers).make()))(input_spec()).serialize())
    poly = None
    if poly_layers is not None:
        b, = jaxport.symbolic_shape("b")
        spec = jax.ShapeDtypeStruct((b, FEATURES), jnp.float32)
        poly = bytes(jaxport.export(jax.jit(MlpFactory.with_layers(poly_layers).make()))(spec).serialize())
    return request.param, static, poly, rounds


@pytest.mark.parametrize("chunk, role", alternating_chunks(CHUNKS, PEERS))
def test_first_lowering_of_a_loaded_artifact(benchmark: BenchmarkFixture, label: Label,
                                             blobs: tuple[str, bytes, bytes | None, int],
                                             chunk: int, role: Role) -> None:
    size, static, _, rounds = blobs
    label(group=f"first jit(exp.call) lowering, {size}", kind="artifact", role=role, baseline="-")
    read = READERS[role]
    benchmark.pedantic(lambda exp: jax.jit(exp.call).trace(input_spec()).lower(),
                       setup=lambda: ((read(static),), {}), rounds=rounds, warmup_rounds=1)


@pytest.mark.parametrize("chunk, role", alternating_chunks(CHUNKS, PEERS))
def test_another_shapes_lowering(benchmark: BenchmarkFixture, label: Label,
                                 blobs: tuple[str, bytes, bytes | None, int],
                                 chunk: int, role: Role) -> None:
    size, _, poly, rounds = blobs
    if poly is None:
        pytest.skip("measured at 2k operations only")
    label(group=f"another shape's lowering, polymorphic {size}", kind="artifact", role=role,
          baseline="-")
    read = READERS[role]

    def setup() -> tuple[tuple[Any], dict[str, Any]]:
        exp = read(poly)
        jax.jit(exp.call).trace(jax.ShapeDtypeStruct((8, FEATURES), jnp.float32)).lower()
        return (exp,), {}

    benchmark.pedantic(
        lambda exp: jax.jit(exp.call).trace(jax.ShapeDtypeStruct((16, FEATURES), jnp.float32)).lower(),
        setup=setup, rounds=rounds, warmup_rounds=1)
