"""A translated model's outputs are written by the nodes that compute them, not copied by an ``Identity``.

ONNX Runtime runs an output's ``Identity`` as a copy (its own optimizer keeps
those whose value has other readers, as a decode step's updated cache has).
The ``Identity`` stays where the output is an input or a value returned
twice (a constant output is an initializer already); the checks of
:mod:`jaxport.adapters.onnx.check` still compare each output's inferred shape
with its declared one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

pytest.importorskip("onnx", reason="the ONNX tests need the jaxport[onnx] extra (onnx)")
pytest.importorskip("onnxruntime", reason="the ONNX tests need the jaxport[onnx] extra (onnxruntime)")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from jax import lax  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

import jaxport  # noqa: E402
from jaxport.adapters.onnx.check import check_model  # noqa: E402
from jaxport.adapters.onnx.translate import translate  # noqa: E402
from jaxport.errors import ConversionError  # noqa: E402

F32 = np.float32
X = np.linspace(-1.0, 2.0, 6).astype(F32).reshape(2, 3)


def converted(function: Callable[..., Any], *args: np.ndarray) -> onnx.ModelProto:
    """``function`` translated (inputs ``in0``..., outputs ``out0``...); asserts ONNX Runtime equals ``jax.jit``."""
    record = jaxport.export(jax.jit(function))(*(jax.ShapeDtypeStruct(a.shape, a.dtype) for a in args)).record
    model = translate(record, input_names=[f"in{i}" for i in range(len(args))],
                      output_names=[f"out{j}" for j in range(len(record.out_avals))])
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    got = session.run(None, {f"in{i}": a for i, a in enumerate(args)})
    want = [np.asarray(w) for w in jax.tree.leaves(jax.jit(function)(*args))]
    assert [str(g.dtype) for g in got] == [str(w.dtype) for w in want]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    return model


def copied(model: onnx.ModelProto) -> list[str]:
    """The outputs that an ``Identity`` writes."""
    producers = {o: n.op_type for n in model.graph.node for o in n.output}
    return [o.name for o in model.graph.output if producers.get(o.name) == "Identity"]


def test_a_computed_output_is_written_by_its_node_also_where_others_read_it() -> None:
    def f(x: Any) -> Any:
        y = jnp.sin(x) * 2
        return y, jnp.sum(y, axis=1)

    model = converted(f, X)
    assert copied(model) == []
    assert sum(n.op_type == "Identity" for n in model.graph.node) == 0


@pytest.mark.parametrize("function, kept", [
    (lambda x: (x, x * 2), ["out0"]),  # an input
    (lambda x: (jnp.cos(x), jnp.cos(x)), ["out0", "out1"]),  # one value returned twice
], ids=["input", "twice"])
def test_an_input_or_a_value_returned_twice_keeps_its_identity(function: Callable[..., Any],
                                                                         kept: Sequence[str]) -> None:
    assert copied(converted(function, X)) == list(kept)


def test_a_loop_reading_an_output_from_outside_reads_it_under_its_new_name() -> None:
    def f(x: Any) -> Any:
        y = jnp.exp(x)
        return y, lax.fori_loop(0, 3, lambda i, c: c + y, x)

    model = converted(f, X)
    assert copied(model) == []
    assert any(n.op_type == "Loop" for n in model.graph.node)


def test_a_written_output_whose_inferred_shape_differs_from_its_declared_one_is_refused() -> None:
    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["out"])], "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in ("a", "b")],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    check_model(model, "f")
    model.graph.output[0].type.tensor_type.shape.dim[0].dim_param = "n"
    with pytest.raises(ConversionError, match=r"ONNX infers the shape \(2\) for the output 'out', declared \(n\)"):
        check_model(model, "f")
