"""Shared set-up for the benchmarks (run by ``make bench``, not by ``make test``).

Each benchmark belongs to a group that measures one quantity, and each group
holds the same measurement through jaxport, through ``jax.export`` and through
a baseline (trace+lower, the jitted original function, a copy of the module);
the call-side and micro-benchmarks of shape polymorphism have no baseline
and run only the two peers (``PEERS``). Each role is split into a few
interleaved chunks (one benchmark each), so that a change of load on the
machine hits them alike. The ``label`` fixture records the role of
each benchmark in ``benchmark.extra_info``, and ``benchmarks/report.py`` pools
the chunks and prints the median ratios per group from the JSON that
``--benchmark-json`` writes. Nothing here asserts on wall-clock times.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

# Benchmarks never write to the user's home: the verdicts jaxport remembers go
# to a folder of this run (child processes inherit it), and a compilation cache
# the user configured for JAX is not used (the cold-start children set their own).
_CACHE_DIR = tempfile.mkdtemp(prefix="jaxport-bench-verdicts-")
os.environ["JAXPORT_CACHE_DIR"] = _CACHE_DIR
atexit.register(shutil.rmtree, _CACHE_DIR, True)
os.environ.pop("JAX_COMPILATION_CACHE_DIR", None)
# The runtimes write under the home when first imported (ONNX Runtime a device id under
# $XDG_CACHE_HOME, Keras with TensorFlow ~/.keras/keras.json): a folder of this run instead.
_HOME_FILES_DIR = tempfile.mkdtemp(prefix="jaxport-bench-home-files-")
os.environ["XDG_CACHE_HOME"] = os.path.join(_HOME_FILES_DIR, "cache")
os.environ["KERAS_HOME"] = os.path.join(_HOME_FILES_DIR, "keras")
atexit.register(shutil.rmtree, _HOME_FILES_DIR, True)

Role = Literal["baseline", "jaxport", "jax.export"]
ROLES: tuple[Role, ...] = ("baseline", "jaxport", "jax.export")
PEERS: tuple[Role, ...] = ("jaxport", "jax.export")
Kind = Literal["export", "dispatch", "wrap", "call", "micro", "artifact", "coldstart", "scale"]


def alternating_chunks(chunks: int, roles: Sequence[str]) -> list[Any]:
    """``(chunk, role)`` parameters: the roles in order in odd chunks, reversed in even ones.

    For ``pytest.mark.parametrize("chunk, role", ...)``: the chunks interleave
    the roles as the other benchmarks do, and the alternation (A B C, C B A,
    ...) keeps any effect of running right after another role from favouring
    one of them.
    """
    return [pytest.param(chunk, role, id=f"chunk{chunk}-{role}")
            for chunk in range(1, chunks + 1)
            for role in (roles if chunk % 2 else tuple(reversed(roles)))]


class Label(Protocol):
    """Puts the running benchmark in its group and records what it measures.

    Args:
        group: the quantity measured; jaxport, jax.export and the baseline of
            one quantity share a group.
        kind: ``"export"`` (the report shows the overhead above the baseline),
            ``"dispatch"`` (the ratio to the baseline), ``"wrap"`` (the time
            above the baseline, a copy of the module, and its ratio), or
            ``"call"`` and ``"micro"`` (jaxport / jax.export; no baseline).
        role: which implementation this benchmark runs.
        baseline: a short description of the group's baseline, for the report.
        **extra: more facts for the JSON (sizes, operation counts).
    """

    def __call__(self, *, group: str, kind: Kind, role: Role, baseline: str,
                 **extra: object) -> None: ...


def pytest_configure(config: pytest.Config) -> None:
    """Creates the folder of ``--benchmark-json`` (pytest-benchmark does not)."""
    json_path = config.getoption("benchmark_json", default=None)
    if isinstance(json_path, Path):
        json_path.parent.mkdir(parents=True, exist_ok=True)


@pytest.fixture
def label(benchmark: BenchmarkFixture) -> Label:
    """The :class:`Label` function of this test's benchmark."""

    def apply(*, group: str, kind: Kind, role: Role, baseline: str, **extra: object) -> None:
        benchmark.group = group
        benchmark.extra_info.update(kind=kind, role=role, baseline=baseline, **extra)

    return apply
