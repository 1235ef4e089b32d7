"""LiteRT against JAX: a fresh process's first answer and peak memory, the time per call, model sizes.

Two models, as in ``test_iree.py``: the MLP of about 2,000 StableHLO
operations (its weights closed over: constants of its module), as an
artifact; and the GPT-2-small-sized transformer of ``models.py`` as a
bundle whose ``predict`` takes ``int32[b, 64]`` token ids, converted for
``b = 1``. Groups (kind ``"litert"``; ``extra_info`` names the model and the quantity):

* ``first answer``: each round a fresh child process that imports what it
  needs, loads the model and answers one call, timed whole. Roles:
  ``litert`` (``jaxport.load_converted`` of the directory ``to_litert``
  wrote, its digests checked, and a call through jaxport's call front: no
  JAX), ``litert builtin`` (the same without XNNPACK,
  which copies the weights into its own packed form), ``jaxport`` and ``jax.export`` (as in
  ``test_iree.py``, JAX's persistent compilation cache warm). Each child
  reports its peak resident memory (``VmHWM``, Linux only); ``weights_bytes``,
  ``baseline_bytes`` (LiteRT alone with a trivial model) and ``very_first_s``
  (the first process on the directory, verdicts cold) beside.
* ``per call``: the call with the weights resident, in this process:
  ``litert`` (a function of ``load_converted``, XNNPACK, LiteRT's default),
  ``litert builtin`` (LiteRT's own kernels) and ``jax.jit`` of the original
  function; results on the host.
* ``conversion``: ``jaxport.to_litert`` in float32 and with ``int8-weights``;
  ``extra_info`` has the model's size and its largest error against
  ``jax.jit`` (normwise: relative to the output's largest magnitude).

LiteRT's CPU kernels target phones: the report says how far a call is from
``jax.jit`` (no goal is set for it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pytest_benchmark.fixture import BenchmarkFixture

import jaxport

from .conftest import alternating_chunks
from .fresh_process import (child_script, run_child, runtime_baselines, save_mlp, save_transformer,
                            time_first_answers, very_first_answers, weights_bytes)

pytest.importorskip("litert_converter", reason="needs the extra jaxport[litert]")

FRESH_ROLES = ("litert", "litert builtin", "jaxport", "jax.export")
CALL_ROUNDS = {"MLP 2k": 300, "transformer": 30}
CHILD = child_script({'role.startswith("litert")': 'jaxport.load_converted(root + "/litert", xnnpack=role == "litert")'})


@dataclass(frozen=True)
class Model:
    """A model's files under ``root``, its record and weights, the original function and its input."""

    name: str
    kind: str
    root: Path
    source: Path
    dims: dict[str, list[dict[str, int]]] | None
    function: Any
    args: tuple[Any, ...]
    #: Per LiteRT role, the wall time of the very first fresh process on its directory (verdicts cold).
    very_first: dict[str, float] = field(default_factory=dict)

    def convert(self, path: Path, quantize: str | None = None) -> int:
        """Converts the source to ``path`` (replacing it); the size of its model, in bytes."""
        manifest = jaxport.to_litert(self.source, path, dims=self.dims, quantize=quantize, overwrite=True)
        return sum(d.size for file, d in manifest.files.items() if file.endswith(".tflite"))

    def child(self, role: str) -> dict[str, Any]:
        """What a fresh process of ``role`` reports (``peak_bytes``)."""
        return run_child(CHILD, self.kind, role, self.root, self.root / "jax-cache")


def _mlp(root: Path) -> Model:
    source, function, args = save_mlp(root)
    return Model("MLP 2k", "mlp", root, source, None, function, args)


def _transformer(root: Path) -> Model:
    source, function, args = save_transformer(root)
    return Model("transformer", "transformer", root, source, {"predict": [{"b": 1}]}, function, args)


@pytest.fixture(scope="module", params=["MLP 2k", "transformer"])
def model(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Model:
    root = tmp_path_factory.mktemp("litert-bench")
    made = _mlp(root) if request.param == "MLP 2k" else _transformer(root)
    made.convert(root / "litert")
    for role in ("jaxport", "jax.export"):  # fill JAX's cache for each
        made.child(role)
    made.very_first.update(very_first_answers(made.child, ["litert", "litert builtin"]))
    return made


@pytest.fixture(scope="module")
def baselines(tmp_path_factory: pytest.TempPathFactory) -> dict[str, int | None]:
    """LiteRT's own baseline (:func:`~.fresh_process.runtime_baselines`), for both its roles."""
    found = runtime_baselines(tmp_path_factory.mktemp("litert-baseline"), ["litert"])
    return {"litert": found["litert"], "litert builtin": found["litert"]}


def label(benchmark: BenchmarkFixture, model: Model, quantity: str, role: str, **extra: object) -> None:
    """Like conftest's ``label``, with this file's roles."""
    benchmark.group = f"LiteRT {quantity}: {model.name}"
    benchmark.extra_info.update(kind="litert", role=role, baseline="-", model=model.name, quantity=quantity,
                                **extra)


@pytest.mark.parametrize("chunk, role", alternating_chunks(2, FRESH_ROLES))
def test_first_answer_of_a_fresh_process(benchmark: BenchmarkFixture, model: Model, chunk: int, role: str,
                                         baselines: dict[str, int | None]) -> None:
    label(benchmark, model, "first answer", role, chunk=chunk, weights_bytes=weights_bytes(model.root),
          baseline_bytes=baselines.get(role), very_first_s=model.very_first.get(role))
    time_first_answers(benchmark, lambda: model.child(role))


@pytest.mark.parametrize("chunk, role", alternating_chunks(2, ("litert", "litert builtin", "jax.jit")))
def test_call_with_the_weights_resident(benchmark: BenchmarkFixture, model: Model, chunk: int,
                                        role: str) -> None:
    label(benchmark, model, "per call", role, chunk=chunk)
    if role.startswith("litert"):
        functions = jaxport.load_converted(model.root / "litert", xnnpack=role == "litert")
        function = functions[next(iter(functions))]
        x = model.args[-1]

        def call() -> Any:
            return function(x)
    else:
        def call() -> Any:
            return np.asarray(model.function(*model.args))
    benchmark.pedantic(call, rounds=CALL_ROUNDS[model.name], iterations=1, warmup_rounds=3)


@pytest.mark.parametrize("quantize", [None, "int8-weights"], ids=["float32", "int8-weights"])
def test_conversion(benchmark: BenchmarkFixture, model: Model, quantize: str | None, tmp_path: Path) -> None:
    label(benchmark, model, "conversion", quantize or "float32")
    sizes: list[int] = []
    out = tmp_path / "out"
    benchmark.pedantic(lambda: sizes.append(model.convert(out, quantize)), rounds=1, iterations=1,
                       warmup_rounds=0)
    functions = jaxport.load_converted(out)
    got = np.asarray(functions[next(iter(functions))](model.args[-1]))
    want = np.asarray(model.function(*model.args))
    benchmark.extra_info.update(model_bytes=sizes[-1],
                                relative_error=float(np.max(np.abs(got - want)) / np.max(np.abs(want))))
