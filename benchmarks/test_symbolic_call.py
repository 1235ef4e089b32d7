"""The call-side abstract evaluation of a polymorphic export, jaxport next to jax.export.

Hot path: calling an export made with symbolic shapes solves the
dimension variables from the actual shapes, checks every constraint and
computes the output shapes. Two models (``models.poly_call_models``: one
argument f32[b, 16]; three arguments f32[b, 2*h], f32[b, h], f32[w] with
constraints ``b >= 2``, ``w >= 4``) are exported by both systems and measured
at three levels:

* ``eval_shape``: ``jax.eval_shape(exp.call, *concrete_specs)``, what a user
  sees (JAX's tracing included);
* ``abstract eval``: the primitive's abstract evaluation rule alone, jaxport's
  ``jax_call.abstract_eval(target, avals)`` and jax's
  ``_export._call_exported_abstract_eval(*avals, exported=exp)``;
* ``solve``: the pure solve, check and output shapes, jaxport's
  ``call_output_shapes`` and jax's ``shape_poly.solve_dim_vars`` followed by
  the static check and the output evaluation that its abstract rule performs.

each in three states:

* ``cold``: every cache of the path cleared before the round (both systems
  cache the abstract rule and the solve, both scopes cache bounds, and JAX's
  tracer caches abstract evaluations by primitive parameters); for
  ``eval_shape`` also a fresh ``Exported`` object, so no per-object state
  (jaxport's caller, its call target) survives: a first call of a freshly
  loaded artifact;
* ``new shape``: caches kept, but each round calls with a batch size never
  seen before, as a server does when the batch size changes;
* ``warm``: the same shapes again. For ``eval_shape`` this includes JAX's
  own caches: while a jaxpr is staged, jaxport's ``exp.call`` binds its
  primitive in the caller's trace (no nested ``jax.jit``), and jax.export's
  re-traces its ``custom_vjp`` wrapper on every call; both then reuse JAX's
  cached abstract evaluation of their primitive.

Everything here is single-threaded CPU work, timed by ``time.process_time``
with the garbage collector off while timing. The two roles of a group run in
``CHUNKS`` interleaved chunks that ``benchmarks/report.py`` pools. The
fixture checks that both systems compute the same output shapes as
``jax.eval_shape`` of the original function.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import jax
import pytest
from jax import export as jax_export
from jax._src import core as jax_core
from jax._src.export import _export as jax_export_internals
from jax._src.export import shape_poly as jax_shape_poly
from jax._src.interpreters import partial_eval as jax_partial_eval
from pytest_benchmark.fixture import BenchmarkFixture

import jaxport
from jaxport.adapters.jax.exported import call as jax_call
from jaxport.adapters.jax.lowering.avals import leaf_paths
from jaxport.domain.symbolic import build_plan, call_output_shapes
from jaxport.domain.symbolic import solve as jaxport_solve

from .conftest import PEERS, Label, Role, alternating_chunks
from .models import PolyCallModel, poly_call_models

pytestmark = pytest.mark.benchmark(timer=time.process_time, disable_gc=True)

CHUNKS = 5
BATCH = 8
# Batch sizes for "new shape" rounds: each round takes the next one, so no
# cache of either system has seen it (fewer than the caches' 4,096 entries).
_new_batches = itertools.count(1_000)

Level = Literal["eval_shape", "abstract eval", "solve"]
State = Literal["cold", "new shape", "warm"]
LEVELS: tuple[Level, ...] = ("eval_shape", "abstract eval", "solve")
STATES: tuple[State, ...] = ("cold", "new shape", "warm")


@dataclass(frozen=True)
class Timing:
    """Rounds per chunk for the states with a set-up, and calls per round when warm."""

    rounds: int
    warm_rounds: int
    warm_iterations: int


# Cold or with a new shape, every round needs its own set-up, so one call per
# round; warm, the abstract rule and the solve take far less than a
# millisecond, so a warm round runs many calls to stay above the timer's noise.
TIMINGS: dict[Level, Timing] = {
    "eval_shape": Timing(rounds=20, warm_rounds=20, warm_iterations=1),
    "abstract eval": Timing(rounds=30, warm_rounds=10, warm_iterations=200),
    "solve": Timing(rounds=30, warm_rounds=10, warm_iterations=20),
}


def _scope_of(avals: tuple[Any, ...]) -> Any:
    """The symbolic scope of the first symbolic dimension of ``avals``."""
    return next(d.scope for a in avals for d in a.shape if not isinstance(d, int))


@dataclass(frozen=True)
class Peer:
    """A model exported by one system, and how to run each level on it.

    Attributes:
        exported: the ``Exported`` (jaxport's or jax's).
        clear_caches: clears every cache of this system's call path.
        work: ``work(level, exported, batch)``: a function of no arguments
            that runs ``level`` for concrete shapes with batch size ``batch``
            (everything it needs is prepared before it is returned).
    """

    exported: Any
    clear_caches: Callable[[], None]
    work: Callable[[Level, Any, int], Callable[[], Any]]


def _clear_jax_tracing_cache() -> None:
    """Clears JAX's own cache of abstract evaluations by (primitive, avals, params).

    It sits in front of both systems' rules when tracing. jax.export's
    ``Exported`` (a primitive parameter) hashes by value, so without this a
    fresh copy of it would hit the entries of the old one; jaxport's call
    target hashes by identity and would not.
    """
    jax_partial_eval._cached_abstract_eval.cache_clear()


def _concrete_avals(model: PolyCallModel, batch: int) -> tuple[Any, ...]:
    return tuple(jax_core.ShapedArray(s.shape, s.dtype) for s in model.concrete_specs(batch))


def _jaxport_peer(model: PolyCallModel) -> Peer:
    exported = jaxport.export(jax.jit(model.fun))(*model.specs("jaxport"))
    scope = _scope_of(exported.in_avals)

    def clear_caches() -> None:
        _clear_jax_tracing_cache()
        jax_call.abstract_eval.cache_clear()
        jaxport_solve._solve_cached.cache_clear()
        build_plan.cache_clear()
        scope.decider._clear_caches()

    def work(level: Level, exp: Any, batch: int) -> Callable[[], Any]:
        if level == "eval_shape":
            specs = model.concrete_specs(batch)
            return lambda: jax.eval_shape(exp.call, *specs)
        avals = _concrete_avals(model, batch)
        if level == "abstract eval":
            target = exp.call_target
            return lambda: jax_call.abstract_eval(target, avals)
        in_shapes = [tuple(a.shape) for a in exp.in_avals]
        out_shapes = [tuple(a.shape) for a in exp.out_avals]
        actual = [tuple(a.shape) for a in avals]
        paths = leaf_paths(exp.in_tree)
        return lambda: call_output_shapes(in_shapes, out_shapes, actual, paths)

    return Peer(exported, clear_caches, work)


def _jax_solve(exp: Any, avals: tuple[Any, ...]) -> tuple[Any, ...]:
    """What jax's abstract rule does after its rank and dtype checks: solve, check, evaluate."""
    dim_vars = jax_shape_poly.all_dim_vars(exp.in_avals)
    solution, constraints, synthetic = jax_shape_poly.solve_dim_vars(
        exp.in_avals, args_kwargs_tree=exp.in_tree)
    evaluator = jax_shape_poly.ShapeEvaluator(
        {name: avals[arg].shape[dim] for name, arg, dim in synthetic})
    constraints.check_statically(evaluator)
    values = [evaluator.evaluate(solution[v]) for v in dim_vars]
    return tuple(jax_core.evaluate_shape(a.shape, dim_vars, *values) for a in exp.out_avals)


def _jax_peer(model: PolyCallModel) -> Peer:
    exported = jax_export.export(jax.jit(model.fun))(*model.specs("jax.export"))
    scope = _scope_of(exported.in_avals)

    def clear_caches() -> None:
        _clear_jax_tracing_cache()
        jax_export_internals._call_exported_abstract_eval.cache_clear()
        jax_shape_poly.solve_dim_vars.cache_clear()
        jax_shape_poly._cached_pretty_print_dimension_descriptor.cache_clear()
        scope._clear_caches()

    def work(level: Level, exp: Any, batch: int) -> Callable[[], Any]:
        if level == "eval_shape":
            specs = model.concrete_specs(batch)
            return lambda: jax.eval_shape(exp.call, *specs)
        avals = _concrete_avals(model, batch)
        if level == "abstract eval":
            rule = jax_export_internals._call_exported_abstract_eval
            return lambda: rule(*avals, exported=exp)
        return lambda: _jax_solve(exp, avals)

    return Peer(exported, clear_caches, work)


@dataclass(frozen=True)
class CallCase:
    """A model and its two exports."""

    model: PolyCallModel
    peers: dict[Role, Peer]


def _output_shapes(level: Level, result: Any) -> list[tuple[int, ...]]:
    """The output shapes in a level's result, for the fixture's check."""
    if level == "eval_shape":
        return [tuple(s.shape) for s in jax.tree_util.tree_leaves(result)]
    if level == "abstract eval":
        avals = result[0] if isinstance(result[0], tuple) else result  # jax's has effects
        return [tuple(a.shape) for a in avals]
    return [tuple(s) for s in result]


@pytest.fixture(scope="module", params=poly_call_models(), ids=["1arg", "3args"])
def case(request: pytest.FixtureRequest) -> CallCase:
    """Exports the model both ways; checks every level against the original function."""
    model: PolyCallModel = request.param
    peers: dict[Role, Peer] = {"jaxport": _jaxport_peer(model), "jax.export": _jax_peer(model)}
    expected = [tuple(s.shape) for s in jax.tree_util.tree_leaves(
        jax.eval_shape(model.fun, *model.concrete_specs(BATCH)))]
    for role, peer in peers.items():
        for level in LEVELS:
            got = _output_shapes(level, peer.work(level, peer.exported, BATCH)())
            assert got == expected, f"{role} {level}: output shapes {got}, expected {expected}"
    return CallCase(model, peers)


@pytest.mark.parametrize(("chunk", "role"), alternating_chunks(CHUNKS, PEERS))
@pytest.mark.parametrize("state", STATES, ids=lambda s: s.replace(" ", "_"))
@pytest.mark.parametrize("level", LEVELS, ids=lambda lv: lv.replace(" ", "_"))
def test_call_abstract_eval(benchmark: BenchmarkFixture, label: Label, case: CallCase,
                            level: Level, state: State, chunk: int, role: Role) -> None:
    label(group=f"{level}, {state}: {case.model.name}", kind="call", role=role,
          baseline="none", chunk=chunk, level=level, state=state)
    peer, timing = case.peers[role], TIMINGS[level]
    if state == "warm":
        thunk = peer.work(level, peer.exported, BATCH)
        benchmark.pedantic(thunk, rounds=timing.warm_rounds, iterations=timing.warm_iterations,
                           warmup_rounds=1)
        return

    def prepare() -> tuple[tuple[Callable[[], Any]], dict[str, object]]:
        if state == "cold":
            peer.clear_caches()
            exp = dataclasses.replace(peer.exported) if level == "eval_shape" else peer.exported
            return (peer.work(level, exp, BATCH),), {}
        return (peer.work(level, peer.exported, next(_new_batches)),), {}

    benchmark.pedantic(_run, setup=prepare, rounds=timing.rounds)


def _run(thunk: Callable[[], Any]) -> Any:
    return thunk()
