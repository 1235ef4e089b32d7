"""Micro-benchmarks of symbolic shapes: parsing and the decision procedure.

Each group runs the same work through the public API of
jaxport (``jaxport.symbolic_shape``, its dimensions' comparisons) and of
``jax.export`` (``jax.export.symbolic_shape``, ``jax._src.core.max_dim``...):

* ``parse``: ``symbolic_shape(SPEC)``, and the same with constraints (each
  call makes a new scope, as a user's call does, and parses the constraints);
* ``decide``: a batch of comparisons between dimensions built beforehand
  (``b >= min(b, h)``, ``2*b + 1 > b``, ...), without constraints and, in a
  scope with ``b >= 16``, ``h >= b``, ``b <= 1024``, comparisons that need them
  (``h + 1 > b``, ``3*h - b >= 30``, ...). ``cold`` clears the scope's bounds
  caches before every batch (inside the timed call; a few dict clears),
  ``warm`` keeps them;
* ``decide, inconclusive``: ``b >= 16`` without constraints, raising and
  catching the inconclusive-comparison error (JAX's own code does this often,
  e.g. in ``core.definitely_equal``), message included.

The fixture checks that both systems decide every comparison alike. Timed by
``time.process_time`` with the garbage collector off, many calls per round;
the two roles of a group run in ``CHUNKS`` interleaved chunks.
"""

from __future__ import annotations

import operator
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from jax import export as jax_export
from jax._src import core as jax_core
from pytest_benchmark.fixture import BenchmarkFixture

import jaxport
from jaxport.domain.symbolic import dim_max, dim_min

from .conftest import PEERS, Label, Role, alternating_chunks

pytestmark = pytest.mark.benchmark(timer=time.process_time, disable_gc=True)

CHUNKS = 5
SPEC = "b, 2*h + 1, floordiv(b, 2), max(b, 4)"
SPEC_CONSTRAINTS = ("b >= 16", "b <= 1024", "h == 2*w")
DECIDE_CONSTRAINTS = ("b >= 16", "h >= b", "b <= 1024")

Compare = Callable[[Any, Any], Any]
# (text, comparison, left, right) built from the dimensions (b, h) and max/min.
Case = tuple[str, Compare, Any, Any]


def _cases_without_constraints(b: Any, h: Any, mx: Compare, mn: Compare) -> list[Case]:
    return [
        ("b >= min(b, h)", operator.ge, b, mn(b, h)),
        ("2*b + 1 > b", operator.gt, 2 * b + 1, b),
        ("max(b, 4) >= 4", operator.ge, mx(b, 4), 4),
        ("floordiv(b, 2) <= b", operator.le, b // 2, b),
        ("mod(b, 3) < 3", operator.lt, b % 3, 3),
    ]


def _cases_with_constraints(b: Any, h: Any, mx: Compare, mn: Compare) -> list[Case]:
    return [
        *_cases_without_constraints(b, h, mx, mn),
        ("h + 1 > b", operator.gt, h + 1, b),
        ("b >= 16", operator.ge, b, 16),
        ("2*b + h >= 40", operator.ge, 2 * b + h, 40),
        ("min(b, 8) >= 8", operator.ge, mn(b, 8), 8),
        ("3*h - b >= 30", operator.ge, 3 * h - b, 30),
    ]


@dataclass(frozen=True)
class Peer:
    """One system's dimensions and operations for the micro-benchmarks."""

    symbolic_shape: Callable[..., Sequence[Any]]
    max: Compare
    min: Compare
    clear_bounds: Callable[[Any], None]
    inconclusive: type[Exception]


def _jaxport_clear(scope: Any) -> None:
    scope.decider._clear_caches()


def _jax_clear(scope: Any) -> None:
    scope._clear_caches()


PEER_OF: dict[Role, Peer] = {
    "jaxport": Peer(jaxport.symbolic_shape, dim_max, dim_min, _jaxport_clear,
                    jax_core.InconclusiveDimensionOperation),
    "jax.export": Peer(jax_export.symbolic_shape, jax_core.max_dim, jax_core.min_dim, _jax_clear,
                       jax_core.InconclusiveDimensionOperation),
}


def _dims(role: Role, constraints: Sequence[str]) -> tuple[Any, Any]:
    b, h = PEER_OF[role].symbolic_shape("b, h", constraints=tuple(constraints))
    return b, h


def _cases(role: Role, constrained: bool) -> tuple[list[Case], Any]:
    """The comparisons for ``role`` and the scope of their dimensions."""
    peer = PEER_OF[role]
    b, h = _dims(role, DECIDE_CONSTRAINTS if constrained else ())
    make = _cases_with_constraints if constrained else _cases_without_constraints
    return make(b, h, peer.max, peer.min), b.scope


def _decide_all(cases: list[Case]) -> list[Any]:
    return [compare(left, right) for _, compare, left, right in cases]


@pytest.fixture(scope="module")
def checked() -> bool:
    """Checks that both systems parse alike and decide every comparison alike."""
    for constraints in ((), SPEC_CONSTRAINTS):
        texts = {role: str(PEER_OF[role].symbolic_shape(SPEC, constraints=constraints))
                 for role in PEERS}
        assert texts["jaxport"] == texts["jax.export"], texts
    for constrained in (False, True):
        decided = {role: _decide_all(_cases(role, constrained)[0]) for role in PEERS}
        assert decided["jaxport"] == decided["jax.export"] == [True] * len(decided["jaxport"]), (
            decided)
    for role in PEERS:
        b, _ = _dims(role, ())
        with pytest.raises(PEER_OF[role].inconclusive):
            _ = b >= 16
    return True


@dataclass(frozen=True)
class Micro:
    """One micro-benchmark: its group, and the work for a role."""

    group: str
    make: Callable[[Role], Callable[[], Any]]
    iterations: int
    rounds: int = 10


def _parse(constraints: tuple[str, ...]) -> Callable[[Role], Callable[[], Any]]:
    def make(role: Role) -> Callable[[], Any]:
        symbolic_shape = PEER_OF[role].symbolic_shape
        return lambda: symbolic_shape(SPEC, constraints=constraints)

    return make


def _decide(constrained: bool, cold: bool) -> Callable[[Role], Callable[[], Any]]:
    def make(role: Role) -> Callable[[], Any]:
        cases, scope = _cases(role, constrained)
        if not cold:
            return lambda: _decide_all(cases)
        clear = PEER_OF[role].clear_bounds

        def cold_batch() -> list[Any]:
            clear(scope)
            return _decide_all(cases)

        return cold_batch

    return make


def _inconclusive(role: Role) -> Callable[[], Any]:
    peer = PEER_OF[role]
    b, _ = _dims(role, ())

    def attempt() -> str:
        try:
            _ = b >= 16
        except peer.inconclusive as exc:
            return str(exc)
        raise AssertionError("b >= 16 was decided without constraints")

    return attempt


# The calls per round keep each round at a few milliseconds, so the cheaper
# the call (a warm batch of comparisons, one inconclusive comparison), the
# more calls per round.
MICROS: dict[str, Micro] = {m.group: m for m in (
    Micro(f"parse '{SPEC}'", _parse(()), iterations=10),
    Micro(f"parse '{SPEC}' with {len(SPEC_CONSTRAINTS)} constraints", _parse(SPEC_CONSTRAINTS),
          iterations=5),
    Micro("decide 5 comparisons, no constraints, cold", _decide(False, cold=True), iterations=5),
    Micro("decide 5 comparisons, no constraints, warm", _decide(False, cold=False), iterations=20),
    Micro("decide 10 comparisons, 3 constraints, cold", _decide(True, cold=True), iterations=3),
    Micro("decide 10 comparisons, 3 constraints, warm", _decide(True, cold=False), iterations=20),
    Micro("decide, inconclusive 'b >= 16' (raise, catch)", _inconclusive, iterations=100),
)}


@pytest.mark.parametrize(("chunk", "role"), alternating_chunks(CHUNKS, PEERS))
@pytest.mark.parametrize("group", list(MICROS), ids=[f"m{i}" for i in range(len(MICROS))])
def test_symbolic_micro(benchmark: BenchmarkFixture, label: Label, checked: bool,
                        group: str, chunk: int, role: Role) -> None:
    micro = MICROS[group]
    label(group=group, kind="micro", role=role, baseline="none", chunk=chunk)
    work = micro.make(role)
    benchmark.pedantic(work, rounds=micro.rounds, iterations=micro.iterations, warmup_rounds=1)
