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
  reports its peak resident memory (``peak_bytes``, ``VmHWM``: Linux only).
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

import json
import os
import subprocess
import sys
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

FRESH_ROLES = ("iree", "jaxport", "jax.export")
FRESH_ROUNDS = 2
CALL_ROUNDS = {"MLP 2k": 300, "transformer": 30}
CHILD = """
import json, os, sys
import numpy as np
model, role, root = sys.argv[1:]
x = np.ones((8, 16), np.float32) if model == "mlp" else np.zeros((1, 64), np.int32)
if role == "iree":
    import jaxport
    functions = jaxport.load_iree(root + "/iree")
    result = functions[next(iter(functions))](x)
elif role == "jaxport":
    import jaxport
    if model == "mlp":
        result = jaxport.load(root + "/mlp.jaxport").call(x)
    else:
        result = jaxport.load_bundle(root + "/bundle")["predict"](x)
else:
    import jax
    from jax import export
    path = root + ("/mlp.jaxport" if model == "mlp" else "/bundle/predict.jaxport")
    exp = export.deserialize(bytearray(open(path, "rb").read()))
    if model == "mlp":
        result = exp.call(x)
    else:
        from safetensors.numpy import load_file
        weights = load_file(root + "/bundle/params.safetensors")
        names = [leaf["key_path"] for leaf in json.load(open(root + "/bundle/manifest.json"))["params"]["leaves"]]
        params = jax.tree_util.tree_unflatten(exp.in_tree.children()[0].children()[0], [weights[n] for n in names])
        result = exp.call(params, x)
np.asarray(result)
# The peak of this process's own memory (ru_maxrss would count the parent's: it survives exec).
peak = next((int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith("VmHWM:"))
            if os.path.exists("/proc/self/status") else None)
print(json.dumps({"peak_bytes": peak}))
"""
#: JAX's settings, as environment variables, of a cache that keeps every compilation.
KEEP_EVERY_COMPILATION = {"JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
                          "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1"}


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

    def child(self, role: str) -> dict[str, Any]:
        env = {**os.environ, "JAX_COMPILATION_CACHE_DIR": str(self.cache), **KEEP_EVERY_COMPILATION}
        done = subprocess.run([sys.executable, "-c", CHILD, self.kind, role, str(self.root)], env=env,
                              capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise RuntimeError(done.stderr[-3000:])
        result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        return result


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
    return Model("transformer", "transformer", root, root / "bundle", {"predict": [{"b": 1}]},
                 jax.jit(gpt), (jax.device_put(params), np.zeros((1, GPT_TOKENS), np.int32)), root / "jax-cache")


@pytest.fixture(scope="module", params=["MLP 2k", "transformer"])
def model(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Model:
    root = tmp_path_factory.mktemp("iree-bench")
    made = _mlp(root) if request.param == "MLP 2k" else _transformer(root)
    jaxport.to_iree(made.source, root / "iree", dims=made.dims)
    for role in ("jaxport", "jax.export"):  # fill JAX's cache for each
        made.child(role)
    return made


def label(benchmark: BenchmarkFixture, model: Model, quantity: str, role: str, **extra: object) -> None:
    """Like conftest's ``label``, with this file's roles (``iree``, ``jaxport``, ``jax.export``, ``jax.jit``)."""
    benchmark.group = f"IREE {quantity}: {model.name}"
    benchmark.extra_info.update(kind="iree", role=role, baseline="-", model=model.name, quantity=quantity,
                                **extra)


@pytest.mark.parametrize("chunk, role", alternating_chunks(2, FRESH_ROLES))
def test_first_answer_of_a_fresh_process(benchmark: BenchmarkFixture, model: Model, chunk: int,
                                         role: str) -> None:
    label(benchmark, model, "first answer", role, chunk=chunk)
    peaks: list[int | None] = []
    benchmark.pedantic(lambda: peaks.append(model.child(role)["peak_bytes"]), rounds=FRESH_ROUNDS,
                       iterations=1, warmup_rounds=0)
    known = [p for p in peaks if p is not None]
    benchmark.extra_info["peak_bytes"] = int(np.median(known)) if known else None


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
