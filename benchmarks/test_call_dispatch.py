"""Steady-state eager call dispatch, jaxport next to jax.export and the jitted original.

For a small function (``sin(x) @ W`` on f32[8, 16]) and the MLP of about
2,000 StableHLO operations, one group per model holds three measurements:
``jax.jit(f)(x)`` (the baseline), ``exp.call(x)`` for the jaxport export and
``exp.call(x)`` for the ``jax.export`` export of the same jitted function.
The input is already on the device, every call is compiled and warmed up
before timing, and each timed call waits for its result
(``block_until_ready``), timed by the wall clock. As for the export
benchmarks, each of the three runs in ``CHUNKS`` interleaved benchmarks that
the report pools. The report shows each call's ratio to the jitted original
and whether jaxport's is within the goal of 1.5x.

A third group times a bundle's call, its weights bound: ``jax.jit(f)(W, x)``,
``jaxport.load_bundle(path)["f"](x)`` and ``jax.export``'s ``exp.call(W, x)``
for ``f(W, x) = sin(x) @ W`` (a refused call is checked again by the call
front, so a good one should cost what ``Exported.call`` costs).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import functools
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import export as jax_export
from pytest_benchmark.fixture import BenchmarkFixture

import jaxport

from .conftest import ROLES, Label, Role
from .models import FEATURES, LAYERS_2K, Array, Fun, MlpFactory, SinMatmulFactory, input_array, input_spec

BASELINE = "jax.jit(f)(x)"
CHUNKS = 5
WARMUP_CALLS = 3


@dataclass(frozen=True)
class DispatchModel:
    """A model and its timing: per chunk, ``rounds`` rounds of ``iterations`` calls."""

    name: str
    make: Callable[[], Fun]
    iterations: int
    rounds: int = 6


# By test id. The work per benchmark is fixed rather than calibrated by the
# clock, so every run times the same calls; the MLP's calls are the longer
# ones, so it gets fewer per round.
MODELS: dict[str, DispatchModel] = {
    "small": DispatchModel("sin(x) @ W", lambda: SinMatmulFactory.create().make(), iterations=200),
    "mlp2k": DispatchModel("MLP 2k ops", lambda: MlpFactory.with_layers(LAYERS_2K).make(),
                           iterations=20),
}


@dataclass(frozen=True)
class DispatchCase:
    """One model, its input, and its three warmed-up callables by role."""

    model: DispatchModel
    x: Array
    calls: dict[Role, Callable[[Array], Array]]


@pytest.fixture(scope="module", params=list(MODELS))
def case(request: pytest.FixtureRequest) -> DispatchCase:
    """Exports the model both ways, compiles and warms up all three calls.

    The results are checked against the jitted original, so a benchmark never
    times a call that computes something else.
    """
    model = MODELS[request.param]
    f = model.make()
    x = input_array()
    calls: dict[Role, Callable[[Array], Array]] = {
        "baseline": jax.jit(f),
        "jaxport": jaxport.export(jax.jit(f))(input_spec()).call,
        "jax.export": jax_export.export(jax.jit(f))(input_spec()).call,
    }
    expected = np.asarray(calls["baseline"](x))
    for role, call in calls.items():
        for _ in range(WARMUP_CALLS):
            y = call(x).block_until_ready()
        np.testing.assert_allclose(np.asarray(y), expected, rtol=1e-5, atol=1e-6,
                                   err_msg=f"{role} computes something else")
    return DispatchCase(model, x, calls)


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("chunk", range(1, CHUNKS + 1), ids=lambda c: f"chunk{c}")
def test_call_dispatch(benchmark: BenchmarkFixture, label: Label,
                       case: DispatchCase, chunk: int, role: Role) -> None:
    model = case.model
    label(group=f"eager call, {model.name}", kind="dispatch", role=role,
          baseline=BASELINE, chunk=chunk)
    call, x = case.calls[role], case.x

    def one_call() -> Array:
        return call(x).block_until_ready()

    benchmark.pedantic(one_call, rounds=model.rounds, iterations=model.iterations,
                       warmup_rounds=1)


def _weighted_sin_matmul(params: dict[str, Array], x: Array) -> Array:
    return jnp.sin(x) @ params["w"]


@pytest.fixture(scope="module")
def bundle_case(tmp_path_factory: pytest.TempPathFactory) -> DispatchCase:
    """A bundle of ``f(W, x)`` saved and loaded, its three warmed-up calls checked against the jitted one."""
    params = {"w": jax.device_put(np.random.default_rng(0).standard_normal((FEATURES, FEATURES),
                                                                          dtype=np.float32))}
    specs = {"w": jax.ShapeDtypeStruct((FEATURES, FEATURES), np.float32)}
    path: Path = tmp_path_factory.mktemp("dispatch-bundle") / "model"
    jaxport.save_bundle(path, {"f": jaxport.export(jax.jit(_weighted_sin_matmul))(specs, input_spec())},
                        params)
    theirs = jax_export.export(jax.jit(_weighted_sin_matmul))(specs, input_spec())
    model = DispatchModel("bundle sin(x) @ W", lambda: SinMatmulFactory.create().make(), iterations=200)
    x = input_array()
    calls: dict[Role, Callable[[Array], Array]] = {
        "baseline": functools.partial(jax.jit(_weighted_sin_matmul), params),
        "jaxport": jaxport.load_bundle(path)["f"],
        "jax.export": functools.partial(theirs.call, params),
    }
    expected = np.asarray(calls["baseline"](x))
    for role, call in calls.items():
        for _ in range(WARMUP_CALLS):
            y = call(x).block_until_ready()
        np.testing.assert_allclose(np.asarray(y), expected, rtol=1e-5, atol=1e-6,
                                   err_msg=f"{role} computes something else")
    return DispatchCase(model, x, calls)


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("chunk", range(1, CHUNKS + 1), ids=lambda c: f"chunk{c}")
def test_bundle_call_dispatch(benchmark: BenchmarkFixture, label: Label,
                              bundle_case: DispatchCase, chunk: int, role: Role) -> None:
    test_call_dispatch(benchmark, label, bundle_case, chunk, role)
