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
  constants and weights take.
* ``conversion``: ``jaxport.to_onnx``, with the ``.onnx`` file's size.

The report prints them with the goals: a call at or under 1.0x of
``jax.jit``'s, a first answer at or under 0.25x and peak memory at or under
0.35x of ``jax.export``'s (cache warm).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from pytest_benchmark.fixture import BenchmarkFixture

import jaxport

from .conftest import alternating_chunks
from .models import GPT_TOKENS, LAYERS_2K, MlpFactory, gpt, gpt_params, input_spec
from .test_iree import CHILD as IREE_CHILD
from .test_iree import Model as IreeModel

FRESH_ROLES = ("onnx", "iree", "jax.export")
FRESH_ROUNDS = 2
CALL_ROLES = ("onnx", "iree", "jax.jit")
#: (model, batch) -> rounds of a per-call benchmark.
CALLS = {("MLP 2k", 8): 300, ("transformer", 1): 30, ("transformer", 8): 10}
ONNX_ROLE = """
if role == "onnx":
    import jaxport
    functions = jaxport.load_converted(root + "/onnx")
    result = functions[next(iter(functions))](x)
"""
#: test_iree's child, with ONNX Runtime as one more role (before its JAX branches).
CHILD = IREE_CHILD.replace('if role == "iree":', ONNX_ROLE.strip() + '\nelif role == "iree":', 1)


@dataclass(frozen=True)
class Model(IreeModel):
    """test_iree's model, with its ONNX directory ``root/onnx`` and what its weights take."""

    weights_bytes: int = 0


def _mlp(root: Path) -> Model:
    fun = MlpFactory.with_layers(LAYERS_2K).make()
    jaxport.save(jaxport.export(jax.jit(fun))(input_spec()), root / "mlp.jaxport")
    return Model("MLP 2k", "mlp", root, root / "mlp.jaxport", {}, jax.jit(fun),
                 (np.ones((8, 16), np.float32),), root / "jax-cache")


def _transformer(root: Path) -> Model:
    params = gpt_params()
    b, = jaxport.symbolic_shape("b")
    spec = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), params)
    exp = jaxport.export(jax.jit(gpt))(spec, jax.ShapeDtypeStruct((b, GPT_TOKENS), jnp.int32))
    jaxport.save_bundle(root / "bundle", {"predict": exp}, params)
    return Model("transformer", "transformer", root, root / "bundle", {"predict": [{"b": 1}, {"b": 8}]},
                 jax.jit(gpt), (jax.device_put(params), np.zeros((1, GPT_TOKENS), np.int32)), root / "jax-cache")


def _child(model: Model, role: str) -> dict[str, Any]:
    """One fresh process of ``role`` (test_iree's runner, with this file's child script)."""
    import json
    import subprocess
    import sys

    env = {**os.environ, "JAX_COMPILATION_CACHE_DIR": str(model.cache),
           "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0", "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1"}
    done = subprocess.run([sys.executable, "-c", CHILD, model.kind, role, str(model.root)], env=env,
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.fixture(scope="module", params=["MLP 2k", "transformer"])
def model(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Model:
    root = tmp_path_factory.mktemp("onnx-bench")
    made = _mlp(root) if request.param == "MLP 2k" else _transformer(root)
    jaxport.to_onnx(made.source, root / "onnx")
    jaxport.to_iree(made.source, root / "iree", dims=made.dims)
    files = [p for p in (root / "onnx").iterdir() if p.suffix in (".onnx", ".safetensors")]
    weights = sum(p.stat().st_size for p in files if p.suffix == ".safetensors") or sum(
        p.stat().st_size for p in files)  # the MLP's weights are constants inside its .onnx
    _child(made, "jax.export")  # fills JAX's cache
    return Model(made.name, made.kind, made.root, made.source, made.dims, made.function, made.args, made.cache,
                 weights)


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
def test_first_answer_of_a_fresh_process(benchmark: BenchmarkFixture, model: Model, chunk: int,
                                         role: str) -> None:
    label(benchmark, model, "first answer", role, chunk=chunk)
    peaks: list[int | None] = []
    benchmark.pedantic(lambda: peaks.append(_child(model, role)["peak_bytes"]), rounds=FRESH_ROUNDS,
                       iterations=1, warmup_rounds=0)
    known = [p for p in peaks if p is not None]
    benchmark.extra_info["peak_bytes"] = int(np.median(known)) if known else None


def test_conversion(benchmark: BenchmarkFixture, model: Model, tmp_path: Path) -> None:
    label(benchmark, model, "conversion", "onnx")
    out = tmp_path / "out"
    benchmark.pedantic(lambda: jaxport.to_onnx(model.source, out, overwrite=True), rounds=1, iterations=1,
                       warmup_rounds=0)
    benchmark.extra_info["onnx_bytes"] = sum(p.stat().st_size for p in out.glob("*.onnx"))
