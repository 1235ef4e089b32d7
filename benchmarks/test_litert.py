"""LiteRT against JAX: a fresh process's first answer and peak memory, the time per call, model sizes.

Two models, as in ``test_iree.py``: the MLP of about 2,000 StableHLO
operations (its weights closed over: constants of its module), as an
artifact; and the GPT-2-small-sized transformer of ``models.py`` as a
bundle whose ``predict`` takes ``int32[b, 64]`` token ids, converted for
``b = 1``. Groups (kind ``"litert"``; ``extra_info`` names the model and the quantity):

* ``first answer``: each round a fresh child process that imports what it
  needs, loads the model and answers one call, timed whole. Roles:
  ``litert`` (the ``.tflite`` file in LiteRT's interpreter through jaxport's
  runtime adapter: no JAX), ``litert builtin`` (the same without XNNPACK,
  which copies the weights into its own packed form), ``jaxport`` and ``jax.export`` (as in
  ``test_iree.py``, JAX's persistent compilation cache warm). Each child
  reports its peak resident memory (``VmHWM``, Linux only).
* ``per call``: the call with the weights resident, in this process:
  ``litert`` (XNNPACK, LiteRT's default), ``litert builtin`` (LiteRT's own
  kernels) and ``jax.jit`` of the original function; results on the host.
* ``conversion``: the conversion to float32 and to ``int8-weights``; each
  round's ``extra_info`` has the model's size and its largest error against
  ``jax.jit`` (normwise: relative to the output's largest magnitude).

LiteRT's CPU kernels target phones: the report says how far a call is from
``jax.jit`` (no goal is set for it).
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
from jaxport.domain.runtime_calls import with_weights_bound
from jaxport.domain.wire_names import input_wire_names, output_wire_names

from .conftest import alternating_chunks
from .models import GPT_TOKENS, LAYERS_2K, MlpFactory, gpt, gpt_params, input_spec

pytest.importorskip("litert_converter", reason="needs the extra jaxport[litert]")

FRESH_ROLES = ("litert", "litert builtin", "jaxport", "jax.export")
FRESH_ROUNDS = 2
CALL_ROUNDS = {"MLP 2k": 300, "transformer": 30}
CHILD = """
import json, os, sys
import numpy as np
model, role, root = sys.argv[1:]
x = np.ones((8, 16), np.float32) if model == "mlp" else np.zeros((1, 64), np.int32)
if role.startswith("litert"):
    from jaxport.adapters.litert_runtime import LiteRtModel
    names = json.load(open(root + "/names.json"))
    model = LiteRtModel(root + "/model.tflite", xnnpack=role == "litert")
    result = model.function(names["key"], names["inputs"], names["outputs"])([x])[0]
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
peak = next((int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith("VmHWM:"))
            if os.path.exists("/proc/self/status") else None)
print(json.dumps({"peak_bytes": peak}))
"""
KEEP_EVERY_COMPILATION = {"JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
                          "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1"}


@dataclass(frozen=True)
class Model:
    """A model's files under ``root``, its record and weights, the original function and its input."""

    name: str
    kind: str
    root: Path
    record: Any
    weights: list[np.ndarray]
    bindings: list[dict[str, int]] | None
    function: Any
    args: tuple[Any, ...]

    @property
    def names(self) -> tuple[list[str], list[str]]:
        callers = with_weights_bound(self.record, len(self.weights)) if self.weights else self.record
        return list(input_wire_names(callers.in_tree)), list(output_wire_names(self.record.out_tree))

    def convert(self, quantize: str | None = None) -> bytes:
        from jaxport.adapters.litert_converter import convert_function

        ins, outs = self.names
        [variant] = convert_function("predict", self.record, weights=self.weights, input_names=ins,
                                     output_names=outs, bindings=self.bindings, quantize=quantize)
        return variant.model

    def child(self, role: str) -> dict[str, Any]:
        env = {**os.environ, "JAX_COMPILATION_CACHE_DIR": str(self.root / "jax-cache"), **KEEP_EVERY_COMPILATION}
        done = subprocess.run([sys.executable, "-c", CHILD, self.kind, role, str(self.root)], env=env,
                              capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise RuntimeError(done.stderr[-3000:])
        result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        return result


def _mlp(root: Path) -> Model:
    fun = MlpFactory.with_layers(LAYERS_2K).make()
    exp = jaxport.export(jax.jit(fun))(input_spec())
    jaxport.save(exp, root / "mlp.jaxport")
    return Model("MLP 2k", "mlp", root, exp.record, [], None, jax.jit(fun), (np.ones((8, 16), np.float32),))


def _transformer(root: Path) -> Model:
    params = gpt_params()
    b, = jaxport.symbolic_shape("b")
    spec = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), params)
    exp = jaxport.export(jax.jit(gpt))(spec, jax.ShapeDtypeStruct((b, GPT_TOKENS), jnp.int32))
    jaxport.save_bundle(root / "bundle", {"predict": exp}, params)
    return Model("transformer", "transformer", root, exp.record, [np.asarray(a) for a in jax.tree.leaves(params)],
                 [{"b": 1}], jax.jit(gpt), (jax.device_put(params), np.zeros((1, GPT_TOKENS), np.int32)))


@pytest.fixture(scope="module", params=["MLP 2k", "transformer"])
def model(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Model:
    root = tmp_path_factory.mktemp("litert-bench")
    made = _mlp(root) if request.param == "MLP 2k" else _transformer(root)
    (root / "model.tflite").write_bytes(made.convert())
    ins, outs = made.names
    (root / "names.json").write_text(json.dumps({"key": "predict", "inputs": ins, "outputs": outs}))
    for role in ("jaxport", "jax.export"):  # fill JAX's cache for each
        made.child(role)
    return made


def label(benchmark: BenchmarkFixture, model: Model, quantity: str, role: str, **extra: object) -> None:
    """Like conftest's ``label``, with this file's roles."""
    benchmark.group = f"LiteRT {quantity}: {model.name}"
    benchmark.extra_info.update(kind="litert", role=role, baseline="-", model=model.name, quantity=quantity,
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


@pytest.mark.parametrize("chunk, role", alternating_chunks(2, ("litert", "litert builtin", "jax.jit")))
def test_call_with_the_weights_resident(benchmark: BenchmarkFixture, model: Model, chunk: int,
                                        role: str) -> None:
    from jaxport.adapters.litert_runtime import LiteRtModel

    label(benchmark, model, "per call", role, chunk=chunk)
    if role.startswith("litert"):
        loaded = LiteRtModel(model.root / "model.tflite", xnnpack=role == "litert")
        function = loaded.function("predict", *model.names)
        x = [model.args[-1]]

        def call() -> Any:
            return function(x)
    else:
        def call() -> Any:
            return np.asarray(model.function(*model.args))
    benchmark.pedantic(call, rounds=CALL_ROUNDS[model.name], iterations=1, warmup_rounds=3)


@pytest.mark.parametrize("quantize", [None, "int8-weights"], ids=["float32", "int8-weights"])
def test_conversion(benchmark: BenchmarkFixture, model: Model, quantize: str | None) -> None:
    from jaxport.adapters.litert_runtime import LiteRtModel

    label(benchmark, model, "conversion", quantize or "float32")
    models: list[bytes] = []
    benchmark.pedantic(lambda: models.append(model.convert(quantize)), rounds=1, iterations=1, warmup_rounds=0)
    [got] = LiteRtModel(models[-1]).function("predict", *model.names)([model.args[-1]])
    want = np.asarray(model.function(*model.args))
    benchmark.extra_info.update(model_bytes=len(models[-1]),
                                relative_error=float(np.max(np.abs(got - want)) / np.max(np.abs(want))))
