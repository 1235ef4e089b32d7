"""Rewrites of a translated ONNX graph into what ONNX Runtime runs fast, each exact.

:func:`optimize` runs over the top-level graph of a model just built (its
weights external initializers) and, in order:

1. **folds constants**: a node whose inputs are all constants of the graph
   (never an external weight, never a node holding a subgraph) is computed
   here with ONNX's reference evaluator and becomes an initializer, unless
   its result is larger than its inputs (an ``Expand`` of a scalar stays a
   node): the static shape arithmetic of a symbolic module (shape vectors of
   ``Concat``, ``Cast``, ``Expand`` of scalar pieces) resolves to constants;
2. **drops broadcasts that an operator's own broadcasting makes**: an
   ``Expand`` read by an elementwise operator is skipped where the operator's
   result keeps its shape without it (the same dimensions, a symbolic one by
   the same ``dim_param``, as :class:`jaxport.adapters.onnx.shapes.ShapeTable` finds them):
   the result is the same array, without materializing the copy;
3. **fuses** the chains of :mod:`jaxport.adapters.onnx.fuse` (layer norm, softmax, GELU) into
   ``LayerNormalization``, ``Softmax`` and ``Gelu`` where a chain is exactly
   what JAX lowers them to;
4. **prunes** what no output reads any more;
5. **writes the outputs where they are computed**: an output that is an
   ``Identity`` of a value made by a node of the graph (not an input, not
   a weight, not another output, not returned twice) is written by that
   node itself under the output's name (ONNX Runtime runs each such
   ``Identity`` as a copy; its own optimizer keeps those whose value has
   other readers, as a decode step's updated cache has).

Nothing derived from a weight is written: folding stops at external data.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from .fuse import fuse, read_names
from .shapes import BROADCASTING, ShapeTable, broadcast

#: Operators never folded: random ones, and those whose result is not a function of the inputs' values.
_NOT_FOLDED = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
                         "Bernoulli"})
#: A folded constant up to this size (a shape vector) is written even where it is larger than the node's
#: inputs; a larger broadcast of a constant stays a node, which the broadcasting operators then skip.
SMALL_BYTES = 64


def optimize(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` (changed in place and returned) with the rewrites of the module's docstring."""
    fold_constants(model.graph, model.opset_import)
    drop_broadcasts(model)
    gemm_for_transposed_weights(model.graph)
    prune(model.graph)  # the fusions count readers
    fuse(model.graph)
    prune(model.graph)
    outputs_in_place(model.graph)
    return model


def fold_constants(graph: onnx.GraphProto, opsets: Sequence[onnx.OperatorSetIdProto]) -> None:
    """Replaces every node computable from the graph's own constants by an initializer (see :func:`optimize`)."""
    values = {t.name: numpy_helper.to_array(t) for t in graph.initializer
              if t.data_location != TensorProto.EXTERNAL}
    kept = []
    for node in graph.node:
        folded = _fold(node, values, opsets)
        if folded is None:
            kept.append(node)
            continue
        for name, value in zip(node.output, folded):
            values[name] = value
            graph.initializer.append(numpy_helper.from_array(value, name))
    del graph.node[:]
    graph.node.extend(kept)


def _fold(node: onnx.NodeProto, values: dict[str, np.ndarray],
          opsets: Sequence[onnx.OperatorSetIdProto]) -> list[np.ndarray] | None:
    """The outputs of ``node`` computed now, or None where it is not folded."""
    if (node.domain not in ("", "ai.onnx") or node.op_type in _NOT_FOLDED
            or any(a.HasField("g") or a.graphs for a in node.attribute)
            or not all(i in values for i in node.input if i)):
        return None
    inputs = [values[i] for i in node.input if i]
    if node.op_type == "Cast" and inputs[0].dtype.kind == "f" and not any(
            a.name == "to" and helper.tensor_dtype_to_np_dtype(a.i).kind == "f" for a in node.attribute):
        return None  # float to integer: NaN and out-of-range values are ONNX Runtime's to decide at run time
    graph = helper.make_graph(
        [node], "fold", [helper.make_tensor_value_info(i, helper.np_dtype_to_tensor_dtype(values[i].dtype), None)
                         for i in node.input if i],
        [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in node.output])
    try:
        results = ReferenceEvaluator(helper.make_model(graph, opset_imports=opsets)).run(
            None, {i: values[i] for i in node.input if i})
    except Exception:  # an operator the reference evaluator lacks: the node stays for ONNX Runtime
        return None
    arrays = [np.asarray(r) for r in results]
    if sum(a.nbytes for a in arrays) > max(SMALL_BYTES, sum(a.nbytes for a in inputs)):
        return None
    return arrays


def drop_broadcasts(model: onnx.ModelProto) -> None:
    """Skips each ``Expand`` that an elementwise reader's own broadcasting makes (see :func:`optimize`)."""
    shapes = ShapeTable(model.graph).shapes
    producers = {o: n for n in model.graph.node for o in n.output}
    for node in model.graph.node:
        if node.op_type not in BROADCASTING:
            continue
        for k, name in enumerate(node.input):
            expand = producers.get(name)
            result = shapes.get(node.output[0])
            while expand is not None and expand.op_type == "Expand" and result is not None:
                operands = [shapes.get(expand.input[0] if j == k else other) for j, other in enumerate(node.input)]
                if any(s is None for s in operands) or broadcast([s for s in operands if s is not None]) != result:
                    break
                node.input[k] = name = expand.input[0]
                expand = producers.get(name)


def gemm_for_transposed_weights(graph: onnx.GraphProto) -> None:
    """``MatMul(a, Transpose(w))`` of a 2-D weight ``w`` as ``Gemm(a's rows, w, transB=1)``, reshaped back.

    ONNX Runtime would otherwise fold the transposition into a transposed
    copy of the weight at load (for the tied embedding of a language model,
    a second copy of its largest tensor).
    """
    table = ShapeTable(graph)
    weights = {t.name for t in graph.initializer}
    producers = {o: n for n in graph.node for o in n.output}
    rewritten: list[onnx.NodeProto] = []
    for node in graph.node:
        transpose = producers.get(node.input[1]) if node.op_type == "MatMul" else None
        a = table.shapes.get(node.input[0])
        w = table.shapes.get(transpose.input[0]) if transpose is not None else None
        if (transpose is None or transpose.op_type != "Transpose" or transpose.input[0] not in weights
                or w is None or len(w) != 2 or a is None or len(a) < 2
                or [a.ints for a in transpose.attribute if a.name == "perm"] not in ([], [[1, 0]])):
            rewritten.append(node)
            continue
        out, width = node.output[0], w[1]
        rows, columns, leading, shape = (f"{out}_{part}" for part in ("rows", "columns", "leading", "shape"))
        graph.initializer.extend([numpy_helper.from_array(np.array([-1, width], np.int64), f"{out}_row_shape"),
                                  numpy_helper.from_array(np.array([w[0]], np.int64), columns)])
        rewritten += [helper.make_node("Reshape", [node.input[0], f"{out}_row_shape"], [rows]),
                      helper.make_node("Gemm", [rows, transpose.input[0]], [f"{out}_gemm"], transB=1),
                      helper.make_node("Shape", [node.input[0]], [leading], start=0, end=len(a) - 1),
                      helper.make_node("Concat", [leading, columns], [shape], axis=0),
                      helper.make_node("Reshape", [f"{out}_gemm", shape], [out])]
    del graph.node[:]
    graph.node.extend(rewritten)


def outputs_in_place(graph: onnx.GraphProto) -> None:
    """Drops each output's ``Identity`` whose value a node of ``graph`` makes for it alone (see :func:`optimize`)."""
    outputs = {o.name for o in graph.output}
    made = {o for n in graph.node for o in n.output}
    copies = [n for n in graph.node if n.op_type == "Identity" and n.output[0] in outputs]
    returned = Counter(n.input[0] for n in copies)
    dropped = {id(n): n for n in copies
               if n.input[0] in made and n.input[0] not in outputs and returned[n.input[0]] == 1}
    kept = [n for n in graph.node if id(n) not in dropped]
    del graph.node[:]
    graph.node.extend(kept)
    if dropped:
        rename_values(graph, {copy.input[0]: copy.output[0] for copy in dropped.values()})


def rename_values(graph: onnx.GraphProto, names: dict[str, str]) -> None:
    """Each value ``old`` of ``names`` named ``names[old]`` wherever ``graph``'s nodes make or read it (in
    its subgraphs too: an outer name is seen inside) and in its ``value_info``, in one walk."""
    for node in graph.node:
        for values in (node.input, node.output):
            for k, name in enumerate(values):
                if name in names:
                    values[k] = names[name]
        for attribute in node.attribute:
            for sub in ([attribute.g] if attribute.HasField("g") else []) + list(attribute.graphs):
                rename_values(sub, names)
    for info in graph.value_info:
        if info.name in names:
            info.name = names[info.name]


def prune(graph: onnx.GraphProto) -> None:
    """Drops the nodes and initializers that no output of ``graph`` reads, directly or through subgraphs."""
    needed = {o.name for o in graph.output}
    kept = []
    for node in reversed(graph.node):
        if any(o in needed for o in node.output):
            kept.append(node)
            needed.update(read_names(node))
    kept.reverse()
    del graph.node[:]
    graph.node.extend(kept)
    initializers = [t for t in graph.initializer if t.name in needed]
    del graph.initializer[:]
    graph.initializer.extend(initializers)
