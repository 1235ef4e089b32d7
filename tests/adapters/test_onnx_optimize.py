"""The rewrites of :mod:`jaxport.adapters.onnx.optimize`: they fire where exact, stay away where not, and equal JAX."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("onnx", reason="the ONNX tests need the jaxport[onnx] extra (onnx)")
pytest.importorskip("onnxruntime", reason="the ONNX tests need the jaxport[onnx] extra (onnxruntime)")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import jaxport  # noqa: E402
from jaxport.adapters.onnx.optimize import optimize  # noqa: E402
from jaxport.adapters.onnx.runtime import OnnxRuntimeModel, machine_threads  # noqa: E402
from tests.helpers import onnx_models as models  # noqa: E402
from tests.helpers.onnx_convert import WEIGHTS, convert  # noqa: E402


def _ops(path: Path) -> Counter[str]:
    return Counter(n.op_type for n in onnx.load(str(path), load_external_data=False).graph.node)


def test_the_fusions_fire_on_the_gpt_like_model_and_it_equals_jax(tmp_path: Path) -> None:
    """The tests' GPT-like decoder for a symbolic batch ``b`` of 16 tokens (as the benchmarks' transformer).

    With the sequence length symbolic too, the positions ``wpe[:t]`` have
    the length ``min(t, 1024)`` for ONNX (its constraint ``t <= 1024`` lives
    in the manifest), so the shapes after it are not known equal and the
    rewrites that need them stay away (the model stays exact, as
    tests/e2e/test_onnx_models.py checks).
    """
    params = models.transformer_params(1, vocab=97, d=32, layers=2, positions=models.MAX_T)
    b, = jaxport.symbolic_shape("b")
    exp = jaxport.export(jax.jit(models.gpt))(models.specs(params), jax.ShapeDtypeStruct((b, 16), jnp.int32))
    jaxport.save_bundle(tmp_path / "bundle", {"logits": exp}, params)
    (converted,) = convert(tmp_path / "bundle", tmp_path / "onnx").values()
    ops = _ops(converted.path)
    layers = len(params["blocks"])
    assert ops["LayerNormalization"] == 2 * layers + 1
    assert ops["Softmax"] == layers and ops["Gelu"] == layers
    assert ops["Gemm"] == 1  # the tied logits: the embedding read with transB, never transposed
    for unfused in ("ReduceSum", "ReduceMax", "Exp", "Tanh", "Sqrt", "Reciprocal"):
        assert ops[unfused] == 0, (unfused, ops)
    assert ops["Expand"] <= 4, ops  # the broadcasts of activations go; a few of the token ids and the mask stay
    model = onnx.load(str(converted.path), load_external_data=False)
    external = [t for t in model.graph.initializer if t.data_location == TensorProto.EXTERNAL]
    assert len(external) == converted.nr_weights == len(jax.tree.leaves(params))
    inline = sum(np.prod(t.dims) for t in model.graph.initializer if t.data_location != TensorProto.EXTERNAL)
    assert inline < 4 * 97  # shape vectors and scalars only: nothing derived from a weight is written
    run = OnnxRuntimeModel(converted.path, allowed=[WEIGHTS])
    for batch in (1, 3):
        tokens = np.random.default_rng(batch).integers(0, 97, (batch, 16)).astype(np.int32)
        (got,) = run.run([tokens])
        np.testing.assert_allclose(got, jax.jit(models.gpt)(params, tokens), rtol=2e-5, atol=2e-5)


def _near_layer_norm(x: jax.Array) -> jax.Array:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / (jnp.sqrt(var) + 1e-5)  # the epsilon after the square root


def _near_softmax(x: jax.Array) -> jax.Array:
    e = jnp.exp(x - x.max(-1, keepdims=True))
    return e / (e.sum(-1, keepdims=True) + 1e-6)


def _near_gelu(x: jax.Array) -> jax.Array:
    return 0.5 * x * (1 + jnp.tanh(np.float32(np.sqrt(2 / np.pi)) * (x + 0.0447 * x ** 3)))


def _exact(x: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + 1e-5), jax.nn.softmax(x, axis=-1), jax.nn.gelu(x, approximate=True)


@pytest.mark.parametrize("fun, absent", [(_near_layer_norm, "LayerNormalization"), (_near_softmax, "Softmax"),
                                         (_near_gelu, "Gelu")], ids=["layer norm", "softmax", "gelu"])
def test_a_chain_that_matches_almost_is_left_as_it_is(tmp_path: Path, fun: Any, absent: str) -> None:
    x = np.random.default_rng(0).normal(size=(3, 8)).astype(np.float32)
    exp = jaxport.export(jax.jit(fun))(jax.ShapeDtypeStruct(x.shape, jnp.float32))
    (converted,) = convert(exp, tmp_path).values()
    assert _ops(converted.path)[absent] == 0
    (got,) = OnnxRuntimeModel(converted.path).run([x])
    np.testing.assert_allclose(got, jax.jit(fun)(x), rtol=1e-5, atol=1e-6)


def test_the_exact_chains_fuse_on_static_shapes_too(tmp_path: Path) -> None:
    x = np.random.default_rng(1).normal(size=(2, 3, 8)).astype(np.float32) * 4
    exp = jaxport.export(jax.jit(_exact))(jax.ShapeDtypeStruct(x.shape, jnp.float32))
    (converted,) = convert(exp, tmp_path).values()
    ops = _ops(converted.path)
    assert (ops["LayerNormalization"], ops["Softmax"], ops["Gelu"]) == (1, 1, 1), ops
    for got, want in zip(OnnxRuntimeModel(converted.path).run([x]), jax.jit(_exact)(x)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[Any]:
    return list(ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds))


def test_a_broadcast_that_grows_the_result_stays() -> None:
    """``Add(Expand(x[1], shape(y)), c[1])`` is ``b`` long only through the Expand: it must stay."""
    nodes = [helper.make_node("Shape", ["y"], ["s"]), helper.make_node("Expand", ["x", "s"], ["e"]),
             helper.make_node("Add", ["e", "c"], ["grown"]),
             helper.make_node("Expand", ["x", "s"], ["e2"]), helper.make_node("Add", ["e2", "y"], ["same"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1]),
                     helper.make_tensor_value_info("y", TensorProto.FLOAT, ["b"])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["b"]) for n in ("grown", "same")],
        initializer=[numpy_helper.from_array(np.array([2.0], np.float32), "c")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    feeds = {"x": np.array([3.0], np.float32), "y": np.arange(5, dtype=np.float32)}
    before = _run(model, feeds)
    optimize(model)
    readers = {n.output[0]: list(n.input) for n in model.graph.node}
    assert readers["grown"][0] == "e" and readers["same"][0] == "x"
    for got, want in zip(_run(model, feeds), before):
        np.testing.assert_array_equal(got, want)


def test_sessions_run_on_the_machines_cores_and_spinning_is_an_option(tmp_path: Path) -> None:
    x = np.random.default_rng(2).normal(size=(2, 3, 8)).astype(np.float32)
    exp = jaxport.export(jax.jit(_exact))(jax.ShapeDtypeStruct(x.shape, jnp.float32))
    (converted,) = convert(exp, tmp_path).values()
    assert 1 <= machine_threads() <= (os.cpu_count() or 1)
    quiet, spinning = OnnxRuntimeModel(converted.path), OnnxRuntimeModel(converted.path, spinning=True, threads=1)
    for a, b in zip(quiet.run([x]), spinning.run([x])):
        np.testing.assert_array_equal(a, b)
