"""The checks of a translated ONNX model: ``onnx.checker`` at full strength, ONNX's shape inference.

A model that fails them is refused with ``ConversionError`` naming what
was found, before (``check_model``, on the model in memory) and after
(``check_file``, on the written file with its external data) it is
written.
"""

from __future__ import annotations

import os
from typing import Any

import onnx
from onnx import TensorProto, helper

from jaxport.domain.errors import ConversionError
from .builder import TARGET


def check_file(path: str | os.PathLike[str], function: str) -> None:
    """``onnx.checker`` at full strength on a written model, its external data in place next to it.

    Raises:
        ConversionError: naming what the checker found.
    """
    try:
        onnx.checker.check_model(os.fspath(path), full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as exc:
        raise ConversionError(TARGET, function, f"the ONNX model is invalid: {exc}") from exc


def check_model(model: onnx.ModelProto, function: str) -> None:
    """``onnx.checker`` at full strength, and ONNX's inferred output shapes against the declared ones.

    The checker wants an external tensor's file on disk: here, before the
    file is written, the external weights are checked as graph inputs of
    their type and shape (what the checker and the shape inference look
    at); :func:`check_file` checks the written file with its data.

    Raises:
        ConversionError: naming what the checker or the shape inference found.
    """
    checkable = onnx.ModelProto()
    checkable.CopyFrom(model)
    external = [t for t in checkable.graph.initializer if t.data_location == TensorProto.EXTERNAL]
    for tensor in external:
        checkable.graph.initializer.remove(tensor)
        checkable.graph.input.append(helper.make_tensor_value_info(tensor.name, tensor.data_type, tensor.dims))
    apart = _declared_apart(checkable.graph)
    try:
        onnx.checker.check_model(checkable, full_check=True)
        inferred = _inferred(checkable)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as exc:
        raise ConversionError(TARGET, function, f"the ONNX model is invalid: {exc}") from exc
    known = {v.name: v for v in (*inferred.graph.value_info, *inferred.graph.output)}
    sources = {n.output[0]: n.input[0] for n in inferred.graph.node if n.op_type == "Identity"}
    for output in model.graph.output:
        found = known.get(sources.get(apart.get(output.name, output.name), ""))
        if found is None or not found.type.tensor_type.HasField("shape"):
            continue
        declared, got = output.type.tensor_type.shape.dim, found.type.tensor_type.shape.dim
        if len(declared) != len(got) or any(
                g.HasField("dim_value") and (not d.HasField("dim_value") or d.dim_value != g.dim_value)
                for d, g in zip(declared, got)):
            raise ConversionError(TARGET, function, f"ONNX infers the shape {_dims(got)} for the output "
                                                    f"'{output.name}', declared {_dims(declared)}")


def _declared_apart(graph: onnx.GraphProto) -> dict[str, str]:
    """Each output that a node other than ``Identity`` writes, declared instead on an ``Identity`` of it
    added to ``graph`` (changed in place), so that the shape inferred for the computed value is not merged
    with the declared one: output name -> the added output's name."""
    made = {o: n.op_type for n in graph.node for o in n.output}
    taken = set(made) | {v.name for v in graph.input} | {t.name for t in graph.initializer}
    declared = {}
    for output in graph.output:
        if made.get(output.name, "Identity") == "Identity":
            continue
        name = f"{output.name}:declared"
        while name in taken:
            name += "_"
        graph.node.append(helper.make_node("Identity", [output.name], [name]))
        declared[output.name], output.name = name, name
    return declared


def _inferred(model: onnx.ModelProto) -> onnx.ModelProto:
    """ONNX's shape inference with data propagation, or without it where only the propagation fails.

    ONNX's data propagation (onnx 1.23) takes the values of a 1-D tensor
    ``Unsqueeze`` reads for a shape, and then refuses a valid ``Mul`` of two
    of them (``jnp.outer``): the shapes inferred without it are checked then.
    """
    try:
        return onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
    except onnx.shape_inference.InferenceError:
        return onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=False)


def _dims(dims: Any) -> str:
    return "(" + ", ".join(str(d.dim_value) if d.HasField("dim_value") else d.dim_param or "?" for d in dims) + ")"
