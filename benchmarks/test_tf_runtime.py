"""Runtimes beyond JAX: a converted SavedModel in TensorFlow next to jaxport's JAX runtime and jax.jit.

Groups of kind ``"runtime"``, one per model (the MLP of about 2,000
StableHLO operations with its weights as module constants; a transformer
block, attention, layer norm and a GELU MLP, exported for a symbolic batch
and saved as a bundle, so that its SavedModel holds the weights as
variables), each with four roles: ``jax.jit`` (``jax.jit(f)`` of the
original on device arrays, the baseline), ``jaxport on JAX``
(``jax_model(source)[name]``: the call front's checks, then
``Exported.call``, NumPy results), ``TF SavedModel`` (the loaded
SavedModel's signature called by TensorFlow, as a server would) and
``jaxport on TF`` (the same signature through the runtime port, checks
first). Every call is checked against ``jax.jit``'s result and warmed up
before timing. The issue's goal: TF SavedModel per call within 1.2x of
``jax.jit(f)``.

A group of kind ``"savedmodel"``: converting a bundle with
``JAXPORT_BENCH_TF_MIB`` MiB of weights (100 by default), against copying its
weights file; the report shows the SavedModel's ``saved_model.pb`` against
the weights' size (goal: under 1%).
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from pytest_benchmark.fixture import BenchmarkFixture

import jaxport
from jaxport.application.conversion.jax_model import jax_model

from .conftest import alternating_chunks
from .models import (
    BLOCK_SEQ,
    BLOCK_WIDTH,
    LAYERS_2K,
    MlpFactory,
    input_array,
    input_spec,
    transformer_block,
    transformer_input,
    transformer_params,
)

pytestmark = pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None,
                                reason="TensorFlow is not installed (pip install 'jaxport[tf]')")

RUNTIME_ROLES = ("jax.jit", "jaxport on JAX", "TF SavedModel", "jaxport on TF")
BASELINE = "jax.jit(f)(x)"
CHUNKS = 4
ROUNDS, ITERATIONS = 6, 20
BATCH = 8
MIB = int(os.environ.get("JAXPORT_BENCH_TF_MIB", "100"))


@dataclass(frozen=True)
class RuntimeCase:
    """One model and its four warmed-up calls by role."""

    name: str
    calls: dict[str, Callable[[], Any]]


def _mlp(root: Path) -> RuntimeCase:
    f = MlpFactory.with_layers(LAYERS_2K).make()
    x = input_array()
    exp = jaxport.export(jax.jit(f))(input_spec())
    jaxport.save(exp, root / "mlp.jaxport")
    jaxport.to_savedmodel(root / "mlp.jaxport", root / "mlp_tf")
    on_jax = jax_model(jaxport.load(root / "mlp.jaxport"))[exp.fun_name]
    return _case("MLP 2k ops", root / "mlp_tf", exp.fun_name, f, (x,), on_jax, np.asarray(x))


def _block(root: Path) -> RuntimeCase:
    params = transformer_params()
    b, = jaxport.symbolic_shape("b")
    specs = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), params)
    exp = jaxport.export(jax.jit(transformer_block))(
        specs, jax.ShapeDtypeStruct((b, BLOCK_SEQ, BLOCK_WIDTH), jnp.float32))
    jaxport.save_bundle(root / "block", {"predict": exp}, params)
    jaxport.to_savedmodel(root / "block", root / "block_tf")
    device_params = jax.device_put(params)
    x = transformer_input(BATCH)
    on_jax = jax_model(jaxport.load_bundle(root / "block"))["predict"]  # the weights bound, as on TF
    return _case("transformer block, b=8", root / "block_tf", "predict",
                 transformer_block, (device_params, jax.device_put(x)), on_jax, x)


def _case(name: str, savedmodel: Path, function: str, jitted: Callable[..., Any], jax_args: tuple[Any, ...],
          on_jax: Callable[[Any], Any], x: np.ndarray) -> RuntimeCase:
    import tensorflow as tf  # loaded by the conversion already

    compiled = jax.jit(jitted)
    served = tf.saved_model.load(str(savedmodel)).signatures["serving_default"]
    on_tf = jaxport.load_converted(savedmodel)[function]
    x_tf = tf.constant(x)
    calls: dict[str, Callable[[], Any]] = {
        "jax.jit": lambda: compiled(*jax_args).block_until_ready(),
        "jaxport on JAX": lambda: on_jax(x),
        "TF SavedModel": lambda: served(arg0=x_tf)["output_0"],
        "jaxport on TF": lambda: on_tf(x),
    }
    expected = np.asarray(calls["jax.jit"]())
    for role, call in calls.items():
        for _ in range(3):
            got = call()
        np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-4, atol=1e-5,
                                   err_msg=f"{role} computes something else")
    return RuntimeCase(name, calls)


@pytest.fixture(scope="module", params=["mlp2k", "block"])
def case(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> RuntimeCase:
    root = tmp_path_factory.mktemp(f"tf-{request.param}")
    return _mlp(root) if request.param == "mlp2k" else _block(root)


@pytest.mark.parametrize("chunk, role", alternating_chunks(CHUNKS, RUNTIME_ROLES))
def test_eager_call_per_runtime(benchmark: BenchmarkFixture, case: RuntimeCase, chunk: int, role: str) -> None:
    benchmark.group = f"eager call by runtime, {case.name}"
    benchmark.extra_info.update(kind="runtime", role=role, baseline=BASELINE, chunk=chunk)
    benchmark.pedantic(case.calls[role], rounds=ROUNDS, iterations=ITERATIONS, warmup_rounds=1)


@dataclass(frozen=True)
class LargeBundle:
    root: Path
    weights_bytes: int


@pytest.fixture(scope="module")
def large_bundle(tmp_path_factory: pytest.TempPathFactory) -> LargeBundle:
    root = tmp_path_factory.mktemp("tf-large")
    rng = np.random.default_rng(0)
    rows = MIB * (1 << 20) // (8 * 4 * 1024)
    params = {f"layer{i}": rng.random((rows, 1024), dtype=np.float32) for i in range(8)}
    specs = {k: jax.ShapeDtypeStruct(a.shape, a.dtype) for k, a in params.items()}
    exp = jaxport.export(jax.jit(lambda p, x: x @ p["layer0"][:4, :4] + sum(jnp.sum(w[0]) for w in p.values())))(
        specs, jax.ShapeDtypeStruct((2, 4), jnp.float32))
    jaxport.save_bundle(root / "model", {"predict": exp}, params)
    return LargeBundle(root, sum(a.nbytes for a in params.values()))


_COUNTER = itertools.count()


@pytest.mark.parametrize("role", ["to_savedmodel", "copy of the weights"])
def test_converting_a_large_bundle(benchmark: BenchmarkFixture, large_bundle: LargeBundle, role: str) -> None:
    benchmark.group = f"convert a bundle of {MIB} MiB to a SavedModel"
    root = large_bundle.root

    def target() -> tuple[tuple[Path], dict[str, Any]]:
        path = root / f"out{next(_COUNTER)}"
        shutil.rmtree(root / "last", ignore_errors=True)
        return (path,), {}

    def convert(path: Path) -> None:
        if role == "to_savedmodel":
            jaxport.to_savedmodel(root / "model", path)
        else:
            path.mkdir()
            shutil.copyfile(root / "model" / "params.safetensors", path / "params.safetensors")
        shutil.rmtree(root / "last", ignore_errors=True)
        path.rename(root / "last")

    benchmark.pedantic(convert, setup=target, rounds=3, warmup_rounds=0)
    info: dict[str, Any] = {"kind": "savedmodel", "role": role, "baseline": "copy of the weights file",
                            "weights_bytes": large_bundle.weights_bytes}
    if role == "to_savedmodel":
        info["graph_bytes"] = (root / "last" / "saved_model.pb").stat().st_size
        info["savedmodel_bytes"] = sum(p.stat().st_size for p in (root / "last").rglob("*") if p.is_file())
    benchmark.extra_info.update(info)
