"""jax.vmap of an exported function: the vectorised path against the sequential one.

``jax.export`` cannot batch an exported call at all. jaxport batches an
in-process export through a lazily exported ``jax.vmap`` of its jaxpr (one
XLA call for the whole batch) and a loaded artifact through a sequential map
(one iteration per batch element). Two ``dispatch`` groups, each against the
jitted ``jax.vmap`` of the original function as its baseline, show what the
vectorised path saves.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import jax
import numpy as np
import pytest
from pytest_benchmark.fixture import BenchmarkFixture

import jaxport

from .conftest import Label, Role
from .models import BATCH, FEATURES, Array, MlpFactory, input_spec

LAYERS = 16
VMAP_SIZE = 64
BASELINE = "jax.jit(jax.vmap(f))"


@dataclass(frozen=True)
class VmapCase:
    """The batched input and the three jitted vmaps, warmed up."""

    xs: Array
    calls: Mapping[str, Callable[[Array], Array]]


@pytest.fixture(scope="module")
def case() -> VmapCase:
    f = MlpFactory.with_layers(LAYERS).make()
    exp = jaxport.export(jax.jit(f))(input_spec())
    loaded = jaxport.deserialize(exp.serialize())
    xs = jax.numpy.asarray(np.random.default_rng(0).standard_normal(
        (VMAP_SIZE, BATCH, FEATURES), dtype=np.float32))
    calls = {"baseline": jax.jit(jax.vmap(f)),
             "vectorised": jax.jit(jax.vmap(exp.call)),
             "sequential": jax.jit(jax.vmap(loaded.call))}
    want = np.asarray(calls["baseline"](xs))
    for name, call in calls.items():
        np.testing.assert_allclose(np.asarray(call(xs)), want, rtol=1e-5, atol=1e-5,
                                   err_msg=f"{name} computes something else")
    return VmapCase(xs, calls)


@pytest.mark.parametrize("path", ["vectorised", "sequential"])
@pytest.mark.parametrize("role", ["baseline", "jaxport"])
def test_vmap_of_an_exported_call(benchmark: BenchmarkFixture, label: Label, case: VmapCase,
                                  path: str, role: Role) -> None:
    label(group=f"vmap over {VMAP_SIZE}, {path} ({LAYERS}-layer MLP)", kind="dispatch",
          role=role, baseline=BASELINE)
    call = case.calls["baseline" if role == "baseline" else path]
    benchmark.pedantic(lambda: call(case.xs).block_until_ready(), rounds=20, iterations=5,
                       warmup_rounds=1)
