"""Export overhead above ``jax.jit(f).trace(spec).lower()``, jaxport next to jax.export.

For an MLP of about 2,000 and about 20,000 StableHLO operations, one group
per size holds three measurements: trace+lower alone (the baseline, work that
any export must do), ``jaxport.export`` and ``jax.export.export``, each given
``jax.jit(f)`` of the same model. Every round builds a fresh function object
and collects garbage (both outside the timed region), so no round reuses a
trace or a lowering of an earlier one, nor pays for an earlier one's garbage.

The three are interleaved: each runs in ``CHUNKS`` short benchmarks, in the
order baseline, jaxport, jax.export, baseline, ..., so that a change of load
on the machine during the run hits all three alike. ``benchmarks/report.py``
pools the chunks of each and derives, per size, the overhead
``(export - trace+lower) / trace+lower`` of each and the ratio of their
export times.

Exporting is single-threaded CPU work (no device, no waiting), so these
benchmarks time the process's CPU time (``time.process_time``) rather than the
wall clock: on a shared machine, time spent descheduled behind other
processes would otherwise swamp differences of a few percent.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from dataclasses import dataclass

import jax
import pytest
from jax import export as jax_export
from pytest_benchmark.fixture import BenchmarkFixture

import jaxport

from .conftest import ROLES, Label, Role
from .models import LAYERS_2K, LAYERS_20K, Fun, MlpFactory, count_stablehlo_ops, input_spec

pytestmark = pytest.mark.benchmark(timer=time.process_time)

BASELINE = "trace+lower"
CHUNKS = 5


@dataclass(frozen=True)
class ExportSize:
    """A model size, and how many timed rounds each of its chunks gets."""

    label: str
    layers: int
    expected_ops: int
    rounds_per_chunk: int


# An export at 20k operations takes seconds, so one round per chunk there
# (three at 2k) keeps `make bench` within a few minutes.
SIZES = (
    ExportSize("2k ops", LAYERS_2K, expected_ops=2_000, rounds_per_chunk=3),
    ExportSize("20k ops", LAYERS_20K, expected_ops=20_000, rounds_per_chunk=1),
)


def _trace_lower(f: Fun) -> object:
    return jax.jit(f).trace(input_spec()).lower()


def _jaxport_export(f: Fun) -> object:
    return jaxport.export(jax.jit(f))(input_spec())


def _jax_export(f: Fun) -> object:
    return jax_export.export(jax.jit(f))(input_spec())


STEPS: dict[Role, Callable[[Fun], object]] = {
    "baseline": _trace_lower,
    "jaxport": _jaxport_export,
    "jax.export": _jax_export,
}


@dataclass(frozen=True)
class ExportCase:
    """A size, its model factory and the operation count of its lowering."""

    size: ExportSize
    factory: MlpFactory
    stablehlo_ops: int


@pytest.fixture(scope="module", params=SIZES, ids=[s.label.split()[0] for s in SIZES])
def case(request: pytest.FixtureRequest) -> ExportCase:
    """Builds the model, counts its operations and runs each step once, untimed."""
    size: ExportSize = request.param
    factory = MlpFactory.with_layers(size.layers)
    ops = count_stablehlo_ops(_trace_lower(factory.make()))
    assert abs(ops - size.expected_ops) <= size.expected_ops // 20, (
        f"the {size.layers}-layer model lowered to {ops} StableHLO ops, "
        f"not about {size.expected_ops}: resize LAYERS_* in benchmarks/models.py")
    for step in STEPS.values():
        step(factory.make())
    return ExportCase(size, factory, ops)


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("chunk", range(1, CHUNKS + 1), ids=lambda c: f"chunk{c}")
def test_export_overhead(benchmark: BenchmarkFixture, label: Label,
                         case: ExportCase, chunk: int, role: Role) -> None:
    size, factory = case.size, case.factory
    label(group=f"export overhead, {size.label}", kind="export", role=role,
          baseline=BASELINE, chunk=chunk, layers=size.layers, stablehlo_ops=case.stablehlo_ops)

    def fresh_function() -> tuple[tuple[Fun], dict[str, object]]:
        gc.collect()  # every round starts from the same heap, untimed
        return (factory.make(),), {}

    result = benchmark.pedantic(STEPS[role], setup=fresh_function, rounds=size.rounds_per_chunk)
    if role != "baseline":
        benchmark.extra_info["artifact_bytes"] = len(result.mlir_module_serialized)
