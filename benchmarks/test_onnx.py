"""ONNX Runtime against JAX and IREE: the time per call, a fresh process's first answer and peak memory.

Two models, as in ``test_iree.py``: the MLP of about 2,000 StableHLO
operations (its weights module constants), as an artifact; and the
GPT-2-small-sized transformer of ``models.py`` as a bundle whose ``predict``
takes ``int32[b, 64]`` for a symbolic ``b`` (one ONNX model for every ``b``;
IREE's directory is compiled for ``b = 1`` and ``b = 8``). Groups (kind
``"onnx"``; ``extra_info`` names the model, the quantity and the machine's
load average when it ran, ``load``):

* ``per call``: the call with the weights resident, in this process, the
  result on the host: ``onnx`` (``jaxport.load_converted`` of the ONNX
  directory, its default session: every graph optimization, one thread per
  core this process may use, no spinning), ``iree`` (``jaxport.load_iree``)
  and ``jax.jit`` (of the original function, weights on the device); the
  transformer at ``b = 1`` and ``b = 8``.
* ``first answer``: each round a fresh child process that imports what it
  needs, loads the model and answers one call, timed whole: ``onnx``
  (``jaxport.load_converted``; no JAX imported), ``iree`` and ``jax.export``
  (``jax.export.deserialize``, weights from the bundle's safetensors, JAX's
  persistent compilation cache warm). Each child reports its peak resident
  memory (``VmHWM``, Linux only); ``weights_bytes`` is what the model's
  constants and weights take, ``baseline_bytes`` the runtime's own peak with
  a trivial model, ``very_first_s`` the first process on the directory
  (jaxport's verdicts cold; the timed ones find them).
* ``conversion``: ``jaxport.to_onnx``, with the ``.onnx`` file's size.

The report prints them with the goals: a call at or under 1.0x of
``jax.jit``'s, a first answer at or under 0.25x and peak memory at or under
0.35x of ``jax.export``'s (cache warm).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from pytest_benchmark.fixture import BenchmarkFixture

import jaxport

from .conftest import alternating_chunks
from .fresh_process import child_script, runtime_baselines, time_first_answers, very_first_answers
from .models import GPT_TOKENS
from .test_iree import IREE_ROLE
from .test_iree import Model as IreeModel

FRESH_ROLES = ("onnx", "iree", "jax.export")
CALL_ROLES = ("onnx", "iree", "jax.jit")
#: (model, batch) -> rounds of a per-call benchmark.
CALLS = {("MLP 2k", 8): 300, ("transformer", 1): 30, ("transformer", 8): 10}
#: test_iree's child, with ONNX Runtime as one more role.
CHILD = child_script({'role == "onnx"': 'jaxport.load_converted(root + "/onnx")', **IREE_ROLE})


@dataclass(frozen=True)
class Model(IreeModel):
    """test_iree's model, with its ONNX directory ``root/onnx`` and what its weights take."""

    weights_bytes: int = 0
    script: ClassVar[str] = CHILD


@pytest.fixture(scope="module", params=["MLP 2k", "transformer"])
def model(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Model:
    root = tmp_path_factory.mktemp("onnx-bench")
    made = Model.mlp(root) if request.param == "MLP 2k" else Model.transformer(root, [1, 8])
    jaxport.to_onnx(made.source, root / "onnx")
    jaxport.to_iree(made.source, root / "iree", dims=made.dims)
    files = [p for p in (root / "onnx").iterdir() if p.suffix in (".onnx", ".safetensors")]
    weights = sum(p.stat().st_size for p in files if p.suffix == ".safetensors") or sum(
        p.stat().st_size for p in files)  # the MLP's weights are constants inside its .onnx
    made.child("jax.export")  # fills JAX's cache
    made.very_first.update(very_first_answers(made.child, ["onnx", "iree"]))
    return dataclasses.replace(made, weights_bytes=weights)


@pytest.fixture(scope="module")
def baselines(tmp_path_factory: pytest.TempPathFactory) -> dict[str, int | None]:
    """ONNX Runtime's and IREE's own baselines (:func:`~.fresh_process.runtime_baselines`)."""
    return runtime_baselines(tmp_path_factory.mktemp("onnx-baseline"), ["onnx", "iree"])


def label(benchmark: BenchmarkFixture, model: Model, quantity: str, role: str, **extra: object) -> None:
    """This file's group and facts; ``load`` is the machine's 1-minute load average as the benchmark starts."""
    benchmark.group = f"ONNX {quantity}: {model.name}" + (f" b={extra['batch']}" if "batch" in extra else "")
    benchmark.extra_info.update(kind="onnx", role=role, baseline="-", model=model.name, quantity=quantity,
                                load=round(os.getloadavg()[0], 1), weights_bytes=model.weights_bytes, **extra)


@pytest.mark.parametrize("batch", [1, 8])
@pytest.mark.parametrize("chunk, role", alternating_chunks(2, CALL_ROLES))
def test_call_with_the_weights_resident(benchmark: BenchmarkFixture, model: Model, batch: int, chunk: int,
                                        role: str) -> None:
    key = (model.name, 8 if model.kind == "mlp" else batch)
    if model.kind == "mlp" and batch == 1:
        pytest.skip("the MLP is static: f32[8, 16]")
    label(benchmark, model, "per call", role, chunk=chunk, batch=key[1])
    x = model.args[-1] if model.kind == "mlp" else np.zeros((batch, GPT_TOKENS), np.int32)
    if role == "jax.jit":
        args = (*model.args[:-1], x)

        def call() -> Any:
            return np.asarray(model.function(*args))
    else:
        functions = jaxport.load_converted(model.root / role)
        function = functions[next(iter(functions))]

        def call() -> Any:
            return function(x)
    benchmark.pedantic(call, rounds=CALLS[key], iterations=1, warmup_rounds=3)


@pytest.mark.parametrize("chunk, role", alternating_chunks(2, FRESH_ROLES))
def test_first_answer_of_a_fresh_process(benchmark: BenchmarkFixture, model: Model, chunk: int, role: str,
                                         baselines: dict[str, int | None]) -> None:
    label(benchmark, model, "first answer", role, chunk=chunk, baseline_bytes=baselines.get(role),
          very_first_s=model.very_first.get(role))
    time_first_answers(benchmark, lambda: model.child(role))


def test_conversion(benchmark: BenchmarkFixture, model: Model, tmp_path: Path) -> None:
    label(benchmark, model, "conversion", "onnx")
    out = tmp_path / "out"
    benchmark.pedantic(lambda: jaxport.to_onnx(model.source, out, overwrite=True), rounds=1, iterations=1,
                       warmup_rounds=0)
    benchmark.extra_info["onnx_bytes"] = sum(p.stat().st_size for p in out.glob("*.onnx"))
