"""IREE against JAX: a fresh process's first answer and peak memory, the time per call, the conversion.

Two models: the MLP of about 2,000 StableHLO operations (its weights closed
over: constants of its module), as an artifact; and the GPT-2-small-sized
transformer of ``models.py`` as a bundle whose ``predict`` takes
``int32[b, 64]`` token ids for a symbolic batch ``b``, converted for ``b = 1``.
Groups (kind ``"iree"``; ``extra_info`` names the model and the quantity):

* ``first answer``: each round a fresh child process that imports what it
  needs, loads the model and answers one call, timed whole (the benchmark's
  time is the child's wall time). Roles: ``iree`` (``jaxport.load_iree``),
  ``jaxport`` (``jaxport.load`` or ``load_bundle`` and a call) and
  ``jax.export`` (``jax.export.deserialize``, the weights read from the
  bundle's safetensors file, a call), both JAX ones with JAX's persistent
  compilation cache warm (a child of each filled it first). Each child
  reports its peak resident memory (``peak_bytes``, ``VmHWM``: Linux only);
  ``weights_bytes``, ``baseline_bytes`` (IREE alone with a trivial model) and
  ``very_first_s`` (the first process on the directory, verdicts cold) beside.
* ``per call``: the call with the weights resident, in this process: ``iree``
  (the loaded model's function, IREE's threaded driver), ``iree local-sync``
  (the same on the calling thread) and ``jax.jit`` (``jax.jit`` of the original
  function on weights already on the device); both give the result on the
  host (IREE's function returns NumPy arrays, the JAX one copies its result).
* ``conversion``: ``jaxport.to_iree`` of the artifact or the bundle.

The report prints them in one table with the goals: the first answer at or
under 0.25x of ``jax.export``'s, peak memory at or under 0.3x, a call at or
under 1.0x of ``jax.jit``'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from pytest_benchmark.fixture import BenchmarkFixture
from typing_extensions import Self

import jaxport

from .conftest import alternating_chunks
from .fresh_process import (child_script, run_child, runtime_baselines, save_mlp, save_transformer,
                            time_first_answers, very_first_answers, weights_bytes)

FRESH_ROLES = ("iree", "jaxport", "jax.export")
CALL_ROUNDS = {"MLP 2k": 300, "transformer": 30}
#: The role of IREE's child: the condition on ``role`` -> how it loads the directory.
IREE_ROLE = {'role == "iree"': 'jaxport.load_iree(root + "/iree")'}
CHILD = child_script(IREE_ROLE)


@dataclass(frozen=True)
class Model:
    """A model's files (``root``: the source, its IREE directory ``iree``), its function and input."""

    name: str
    kind: str
    root: Path
    source: Path
    dims: dict[str, list[dict[str, int]]]
    function: Any
    args: tuple[Any, ...]
    cache: Path
    #: Per target role, the wall time of the very first fresh process on its directory (verdicts cold).
    very_first: dict[str, float] = field(default_factory=dict)
    #: The child's script (a benchmark with more roles names its own).
    script: ClassVar[str] = CHILD

    @classmethod
    def mlp(cls, root: Path) -> Self:
        """The MLP, saved under ``root``."""
        source, function, args = save_mlp(root)
        return cls("MLP 2k", "mlp", root, source, {}, function, args, root / "jax-cache")

    @classmethod
    def transformer(cls, root: Path, batches: Sequence[int]) -> Self:
        """The transformer, saved under ``root``, to be compiled for each of ``batches``."""
        source, function, args = save_transformer(root)
        return cls("transformer", "transformer", root, source, {"predict": [{"b": b} for b in batches]},
                   function, args, root / "jax-cache")

    def child(self, role: str) -> dict[str, Any]:
        """What a fresh process of ``role`` reports (``peak_bytes``)."""
        return run_child(self.script, self.kind, role, self.root, self.cache)


@pytest.fixture(scope="module", params=["MLP 2k", "transformer"])
def model(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Model:
    root = tmp_path_factory.mktemp("iree-bench")
    made = Model.mlp(root) if request.param == "MLP 2k" else Model.transformer(root, [1])
    jaxport.to_iree(made.source, root / "iree", dims=made.dims)
    for role in ("jaxport", "jax.export"):  # fill JAX's cache for each
        made.child(role)
    made.very_first.update(very_first_answers(made.child, ["iree"]))
    return made


@pytest.fixture(scope="module")
def baselines(tmp_path_factory: pytest.TempPathFactory) -> dict[str, int | None]:
    """IREE's own baseline (:func:`~.fresh_process.runtime_baselines`)."""
    return runtime_baselines(tmp_path_factory.mktemp("iree-baseline"), ["iree"])


def label(benchmark: BenchmarkFixture, model: Model, quantity: str, role: str, **extra: object) -> None:
    """Like conftest's ``label``, with this file's roles (``iree``, ``jaxport``, ``jax.export``, ``jax.jit``)."""
    benchmark.group = f"IREE {quantity}: {model.name}"
    benchmark.extra_info.update(kind="iree", role=role, baseline="-", model=model.name, quantity=quantity,
                                **extra)


@pytest.mark.parametrize("chunk, role", alternating_chunks(2, FRESH_ROLES))
def test_first_answer_of_a_fresh_process(benchmark: BenchmarkFixture, model: Model, chunk: int, role: str,
                                         baselines: dict[str, int | None]) -> None:
    label(benchmark, model, "first answer", role, chunk=chunk, weights_bytes=weights_bytes(model.root),
          baseline_bytes=baselines.get(role), very_first_s=model.very_first.get(role))
    time_first_answers(benchmark, lambda: model.child(role))


@pytest.mark.parametrize("chunk, role", alternating_chunks(2, ("iree", "iree local-sync", "jax.jit")))
def test_call_with_the_weights_resident(benchmark: BenchmarkFixture, model: Model, chunk: int,
                                        role: str) -> None:
    label(benchmark, model, "per call", role, chunk=chunk)
    if role.startswith("iree"):
        functions = jaxport.load_iree(model.root / "iree", driver="local-sync" if "sync" in role else "local-task")
        function = functions[next(iter(functions))]
        x = model.args[-1]

        def call() -> Any:
            return function(x)
    else:
        def call() -> Any:
            return np.asarray(model.function(*model.args))
    benchmark.pedantic(call, rounds=CALL_ROUNDS[model.name], iterations=1, warmup_rounds=3)


def test_conversion(benchmark: BenchmarkFixture, model: Model, tmp_path: Path) -> None:
    label(benchmark, model, "conversion", "iree")
    benchmark.pedantic(lambda: jaxport.to_iree(model.source, tmp_path / "out", dims=model.dims),
                       rounds=1, iterations=1, warmup_rounds=0)
