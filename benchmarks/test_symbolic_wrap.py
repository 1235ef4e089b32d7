"""Wrapping ``main`` of a polymorphic module, and the polymorphic export's overhead.

Hot path: wrapping main, for the MLP with a symbolic batch ``b`` (f32[b, 16]) of
about 2,000 and about 20,000 StableHLO operations:

* ``wrap main``: the lowered module's ``main`` is wrapped so that it computes
  ``b`` from its argument and asserts ``b >= 1``. Both wrappers get their own
  copy of the *same* lowered module (jaxport's lowering; the fixture checks
  that jax.export's lowering of the same function prints identically, so
  jax's avals describe it). jaxport: ``build_plan`` then
  ``wrap_main``, which copies the module into a fresh context
  itself; jax.export: the same copy that ``_export_lowered`` makes, then
  ``_wrap_main_func``. The baseline is the copy alone, so the report can show
  the wrap proper as ``(copy + wrap) - copy``. The plan caches of both
  (``build_plan``, ``shape_poly.solve_dim_vars``) are cleared before every round.
* ``export overhead, polymorphic``: ``jaxport.export`` and
  ``jax.export.export`` of ``jax.jit(f)`` at f32[b, 16], above the baseline
  ``jax.jit(f).trace(spec).lower()`` with jax's own symbolic ``b``; a fresh
  function every round, as in ``test_export_overhead.py``.

Both measure single-threaded CPU work, timed by ``time.process_time``; every
round starts after ``gc.collect()`` (untimed). The three roles of a group run
in ``CHUNKS`` interleaved chunks, in alternating order, that
``benchmarks/report.py`` pools.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import pytest
from jax import export as jax_export
from jax._src import config as jax_config
from jax._src.export import _export as jax_export_internals
from jax._src.export import shape_poly as jax_shape_poly
from jax._src.interpreters import mlir as jax_mlir
from jax.extend.mlir import ir
from pytest_benchmark.fixture import BenchmarkFixture

import jaxport
from jaxport.adapters.jax.lowering.avals import leaf_paths
from jaxport.adapters.jax.lowering.lower import JaxLowerer, JaxLowering
from jaxport.adapters.mlir.wrap import wrap_main
from jaxport.domain.symbolic import build_plan

from .conftest import ROLES, Label, Role, alternating_chunks
from .models import LAYERS_POLY_2K, LAYERS_POLY_20K, Fun, MlpFactory, count_module_ops, symbolic_batch_spec

pytestmark = pytest.mark.benchmark(timer=time.process_time)

CHUNKS = 5
PLATFORMS = ("cpu",)


@dataclass(frozen=True)
class PolySize:
    """A model size and the timed rounds per chunk of its two measurements."""

    label: str
    layers: int
    expected_ops: int
    wrap_rounds: int
    export_rounds: int


# The wrap proper is a fraction of copy+wrap and the report subtracts two
# medians, so the wrap gets many rounds; an export at 20k takes seconds, and
# its rounds spread widely, so it still gets two per chunk.
SIZES = (
    PolySize("2k ops", LAYERS_POLY_2K, expected_ops=2_000, wrap_rounds=16, export_rounds=3),
    PolySize("20k ops", LAYERS_POLY_20K, expected_ops=20_000, wrap_rounds=10, export_rounds=2),
)


@dataclass(frozen=True)
class JaxWrapInputs:
    """What ``_wrap_main_func`` needs besides the module (from jax.export's lowering)."""

    avals: tuple[Any, ...]
    in_tree: Any
    has_platform_index: bool
    kept_var_idx: tuple[int, ...]


@dataclass(frozen=True)
class PolyCase:
    """A size, its factory, the lowered module both wrappers copy, and the specs."""

    size: PolySize
    factory: MlpFactory
    stablehlo_ops: int
    lowering: JaxLowering
    jax_inputs: JaxWrapInputs
    jaxport_spec: jax.ShapeDtypeStruct
    jax_spec: jax.ShapeDtypeStruct


def _jax_export_lowering(f: Fun, spec: jax.ShapeDtypeStruct) -> Any:
    """``jax.jit(f)`` lowered with the parameters that ``jax.export`` uses."""
    params = jax_mlir.LoweringParameters(
        for_export=True, hoist_constants_as_args=False,
        export_ignore_forward_compatibility=jax_config.export_ignore_forward_compatibility.value)
    return jax.jit(f).trace(spec).lower(lowering_platforms=PLATFORMS, _private_parameters=params)


def _asm(module: Any) -> str:
    return str(module.operation.get_asm(enable_debug_info=False))


# ---- the wrap steps -------------------------------------------------------------


def _copy(module: Any) -> Any:
    """The copy ``jax.export`` makes before wrapping (a fresh context, via bytecode)."""
    context = jax_mlir.make_ir_context()
    with context, ir.Location.unknown(context):
        return ir.Module.parse(jax_mlir.module_to_bytecode(module))


def _jaxport_wrap(case: PolyCase) -> Any:
    low = case.lowering
    plan = build_plan(tuple(tuple(a.shape) for a in low.in_avals), leaf_paths(low.in_tree))
    return wrap_main(
        low.module, plan=plan, dim_vars=low.dim_vars, has_platform_index=low.has_platform_index,
        nr_tokens=len(low.ordered_effects), kept_var_idx=low.kept_var_idx, shape_assertions=True)


def _jax_wrap(case: PolyCase) -> Any:
    inputs = case.jax_inputs
    return jax_export_internals._wrap_main_func(
        _copy(case.lowering.module), inputs.avals, args_kwargs_tree=inputs.in_tree,
        has_platform_index_argument=inputs.has_platform_index,
        module_kept_var_idx=inputs.kept_var_idx,
        serialization_version=jax_config.jax_export_calling_convention_version.value)


WRAP_STEPS: dict[Role, Callable[[PolyCase], Any]] = {
    "baseline": lambda case: _copy(case.lowering.module),
    "jaxport": _jaxport_wrap,
    "jax.export": _jax_wrap,
}


def _clear_plan_caches() -> None:
    build_plan.cache_clear()
    jax_shape_poly.solve_dim_vars.cache_clear()


# ---- the export steps -----------------------------------------------------------


EXPORT_STEPS: dict[Role, Callable[[PolyCase, Fun], Any]] = {
    "baseline": lambda case, f: jax.jit(f).trace(case.jax_spec).lower(),
    "jaxport": lambda case, f: jaxport.export(jax.jit(f))(case.jaxport_spec),
    "jax.export": lambda case, f: jax_export.export(jax.jit(f))(case.jax_spec),
}


@pytest.fixture(scope="module", params=SIZES, ids=[s.label.split()[0] for s in SIZES])
def case(request: pytest.FixtureRequest) -> PolyCase:
    """Lowers the model both ways, checks they agree, runs every step once untimed."""
    size: PolySize = request.param
    factory = MlpFactory.with_layers(size.layers)
    jaxport_spec, jax_spec = symbolic_batch_spec("jaxport"), symbolic_batch_spec("jax.export")
    f = factory.make()
    lowering = JaxLowerer().lower(jax.jit(f), PLATFORMS, (jaxport_spec,), {})
    jax_lowered = _jax_export_lowering(f, jax_spec)
    assert _asm(lowering.module) == _asm(jax_lowered._lowering.stablehlo()), (
        "jaxport and jax.export lower the polymorphic MLP differently: the wrap "
        "benchmark would not give both wrappers the same module")
    ops = count_module_ops(lowering.module)
    assert abs(ops - size.expected_ops) <= size.expected_ops // 20, (
        f"the {size.layers}-layer polymorphic model lowered to {ops} StableHLO ops, "
        f"not about {size.expected_ops}: resize LAYERS_POLY_* in benchmarks/models.py")
    compile_args = jax_lowered._lowering.compile_args
    jax_inputs = JaxWrapInputs(
        avals=tuple(jax.tree_util.tree_leaves(jax_lowered.in_avals)),
        in_tree=jax_lowered.in_tree,
        has_platform_index=bool(compile_args["shape_poly_state"].has_platform_index_argument),
        kept_var_idx=tuple(sorted(compile_args["kept_var_idx"])))
    case = PolyCase(size, factory, ops, lowering, jax_inputs, jaxport_spec, jax_spec)
    wrapped = {role: step(case) for role, step in WRAP_STEPS.items()}
    main_types = {role: str(ir.SymbolTable(m.operation)["main"].attributes["function_type"])
                  for role, m in wrapped.items() if role != "baseline"}
    assert main_types["jaxport"] == main_types["jax.export"], main_types
    del wrapped
    for export_step in EXPORT_STEPS.values():
        export_step(case, factory.make())
    return case


@pytest.mark.parametrize(("chunk", "role"), alternating_chunks(CHUNKS, ROLES))
def test_wrap_main(benchmark: BenchmarkFixture, label: Label,
                   case: PolyCase, chunk: int, role: Role) -> None:
    size = case.size
    label(group=f"wrap main, polymorphic {size.label}", kind="wrap", role=role,
          baseline="copy module", chunk=chunk, layers=size.layers, stablehlo_ops=case.stablehlo_ops)

    def fresh_round() -> tuple[tuple[PolyCase], dict[str, object]]:
        _clear_plan_caches()
        gc.collect()
        return (case,), {}

    benchmark.pedantic(WRAP_STEPS[role], setup=fresh_round, rounds=size.wrap_rounds)


@pytest.mark.parametrize(("chunk", "role"), alternating_chunks(CHUNKS, ROLES))
def test_poly_export_overhead(benchmark: BenchmarkFixture, label: Label,
                              case: PolyCase, chunk: int, role: Role) -> None:
    size = case.size
    label(group=f"export overhead, polymorphic {size.label}", kind="export", role=role,
          baseline="trace+lower", chunk=chunk, layers=size.layers,
          stablehlo_ops=case.stablehlo_ops)

    def fresh_function() -> tuple[tuple[PolyCase, Fun], dict[str, object]]:
        gc.collect()
        return (case, case.factory.make()), {}

    result = benchmark.pedantic(EXPORT_STEPS[role], setup=fresh_function,
                                rounds=size.export_rounds)
    if role != "baseline":
        benchmark.extra_info["artifact_bytes"] = len(result.mlir_module_serialized)
