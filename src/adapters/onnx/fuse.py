"""Fusions of exact JAX chains into ``LayerNormalization``, ``Softmax`` and ``Gelu`` (standard ``ai.onnx``).

Each matcher reads the chain the translation writes for one JAX idiom,
from its last node back, and fuses it only where every node is the one
expected (operator, constants, axes) and no value inside the chain is read
outside it; a chain that matches almost (another epsilon than a constant,
a reduction over other axes, a coefficient off by one bit) is left as it
is. The chains, as JAX lowers them and the translation writes them:

* layer norm over the last axis (``mean``, ``mean((x - mean)**2)``,
  ``(x - mean) * rsqrt(var + eps) * scale + bias``)::

      m = Div(Unsqueeze(ReduceSum(x)), n); d = Sub(x, m)
      v = Div(Unsqueeze(ReduceSum(Mul(d, d))), n)
      y = Mul(d, Reciprocal(Sqrt(Add(v, eps)))) [Mul(y, scale)] [Add(y, bias)]

  with ``n`` the axis' size and ``scale``, ``bias`` 1-D along it (read through
  ``Unsqueeze``): ``LayerNormalization(x, scale or ones, bias, epsilon=eps)``.
  ONNX Runtime computes the variance as ``mean(x**2) - mean**2``: the same
  within float32's tolerance for activations, not bit for bit.
* ``jax.nn.softmax`` (the maximum's NaN guard of the translation included)::

      r = ReduceMax(x) [NaN where a slice holds one] [Max(-inf, r)]
      e = Exp(Sub(x, Unsqueeze(r))); y = Div(e, Unsqueeze(ReduceSum(e)))

  becomes ``Softmax(x, axis)``.
* ``jax.nn.gelu(x, approximate=True)``::

      y = Mul(x, Mul(0.5, Add(1, Tanh(Mul(sqrt(2/pi), Add(x, Mul(0.044715, Mul(Mul(x, x), x))))))))

  becomes ``Gelu(x, approximate="tanh")`` (opset 20 and later).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from .shapes import Shape, ShapeTable


class _Graph:
    """The producers, reader counts and constant values of one graph, for the matchers."""

    def __init__(self, graph: onnx.GraphProto) -> None:
        self.graph = graph
        self.producer = {o: n for n in graph.node for o in n.output}
        self.readers: Counter[str] = Counter(i for n in graph.node for i in read_names(n))
        self.readers.update(o.name for o in graph.output)
        self.constants = {t.name: numpy_helper.to_array(t) for t in graph.initializer
                          if t.data_location != TensorProto.EXTERNAL}
        self.external = {t.name: tuple(t.dims) for t in graph.initializer if t.data_location == TensorProto.EXTERNAL}

    def made(self, name: str, op_type: str, readers: int | None = 1) -> onnx.NodeProto | None:
        """The node of ``op_type`` making ``name``, where ``readers`` nodes read it (None: any number)."""
        node = self.producer.get(name)
        if node is None or node.op_type != op_type or node.domain not in ("", "ai.onnx"):
            return None
        if readers is not None and self.readers[name] != readers:
            return None
        found: onnx.NodeProto = node
        return found

    def scalar(self, name: str) -> float | None:
        """The value of a constant whose elements are all that one value (a scalar broadcast), else None.

        A matcher that reads one checks that the fused node's output has the
        chain's shape (a constant can only have widened it).
        """
        value = self.constants.get(name)
        if value is None or value.size == 0 or value.dtype.kind != "f":
            return None
        first = value.reshape(-1)[0]
        return float(first) if bool(np.all((value == first) | (np.isnan(value) & np.isnan(first)))) else None

    def ints(self, name: str) -> list[int] | None:
        value = self.constants.get(name)
        return None if value is None or value.dtype.kind not in "iu" else [int(v) for v in value.reshape(-1)]


def fuse(graph: onnx.GraphProto) -> None:
    """Replaces each chain that is exactly JAX's layer norm, softmax or GELU by the ONNX operator.

    ``graph`` is changed in place; the nodes of a replaced chain stay, unread, for pruning.
    Each matcher reads the graph as it was before its pass (the fusions are
    exact, so the values are the same): a layer norm without scale and bias
    inside one with them fuses too, unread, and goes with the pruning.
    """
    shapes = ShapeTable(graph).shapes  # the fused nodes keep their outputs' names and shapes
    for matcher in (_softmax, _gelu, _layer_norm):
        view = _Graph(graph)
        for node in list(graph.node):
            fused = matcher(view, node, shapes)
            if fused is not None:  # in the chain's last node's place (the view keeps the node it read)
                index = list(graph.node).index(node)
                del graph.node[index]
                graph.node.insert(index, fused)


def read_names(node: onnx.NodeProto) -> list[str]:
    """The names a node reads: its inputs, and what the nodes of its subgraphs read (outer names too)."""
    names = [i for i in node.input if i]
    for attribute in node.attribute:
        for sub in ([attribute.g] if attribute.HasField("g") else []) + list(attribute.graphs):
            for inner in sub.node:
                names.extend(read_names(inner))
    return names


def _pair(g: _Graph, node: onnx.NodeProto, constant: float) -> str | None:
    """The operand of a binary ``node`` other than a constant equal to ``constant`` (float32), if it has one."""
    for k in (0, 1):
        value = g.scalar(node.input[k])
        if value is not None and np.float32(value) == np.float32(constant):
            return str(node.input[1 - k])
    return None


def _unsqueezed(g: _Graph, name: str, op_type: str, axes: list[int]) -> onnx.NodeProto | None:
    """The ``op_type`` reduction over ``axes`` (keepdims 0) that ``name`` unsqueezes back, if it is that."""
    unsqueeze = g.made(name, "Unsqueeze", readers=None)
    if unsqueeze is None or g.ints(unsqueeze.input[1]) != axes:
        return None
    reduce = g.made(unsqueeze.input[0], op_type)
    if reduce is None or len(reduce.input) < 2 or g.ints(reduce.input[1]) != axes or attribute(reduce, "keepdims", 1) != 0:
        return None
    return reduce


def attribute(node: onnx.NodeProto, name: str, default: Any) -> Any:
    """The value of ``node``'s attribute ``name``, or ``default`` where it has none."""
    return next((helper.get_attribute_value(a) for a in node.attribute if a.name == name), default)


def _softmax(g: _Graph, node: onnx.NodeProto, shapes: dict[str, Shape]) -> onnx.NodeProto | None:
    if node.op_type != "Div" or node.domain not in ("", "ai.onnx"):
        return None
    exp = g.made(node.input[0], "Exp", readers=2)
    if exp is None:
        return None
    unsqueeze = g.made(node.input[1], "Unsqueeze")
    axes = g.ints(unsqueeze.input[1]) if unsqueeze is not None else None
    if axes is None or len(axes) != 1 or _unsqueezed(g, node.input[1], "ReduceSum", axes) is None:
        return None
    if g.producer[g.producer[node.input[1]].input[0]].input[0] != exp.output[0]:
        return None
    sub = g.made(exp.input[0], "Sub")
    if sub is None:
        return None
    x = sub.input[0]
    maximum = g.made(sub.input[1], "Unsqueeze")
    if maximum is None or g.ints(maximum.input[1]) != axes:
        return None
    top = maximum.input[0]
    floor = g.made(top, "Max")
    if floor is not None:
        inner = _pair(g, floor, -math.inf)
        if inner is None:
            return None
        top = inner
    top = _without_nan_guard(g, top, x, axes)
    reduce = g.made(top, "ReduceMax")
    if reduce is None or reduce.input[0] != x or g.ints(reduce.input[1]) != axes or attribute(reduce, "keepdims", 1) != 0:
        return None
    if shapes.get(x) is None or shapes.get(x) != shapes.get(node.output[0]):
        return None
    return helper.make_node("Softmax", [x], [node.output[0]], axis=axes[0])


def _without_nan_guard(g: _Graph, name: str, x: str, axes: list[int]) -> str:
    """Through the translation's ``Where(all(x == x), max, NaN)`` around a maximum, to the maximum."""
    where = g.made(name, "Where")
    if where is None or g.scalar(where.input[2]) is None or not math.isnan(g.scalar(where.input[2]) or 0.0):
        return name
    to_bool = g.made(where.input[0], "Cast")
    low = g.made(to_bool.input[0], "ReduceMin") if to_bool is not None else None
    to_int = g.made(low.input[0], "Cast") if low is not None and g.ints(low.input[1]) == axes else None
    equal = g.made(to_int.input[0], "Equal") if to_int is not None else None
    if equal is None or list(equal.input) != [x, x] or attribute(low, "keepdims", 1) != 0:  # type: ignore[arg-type]
        return name
    return str(where.input[1])


def _gelu(g: _Graph, node: onnx.NodeProto, shapes: dict[str, Shape]) -> onnx.NodeProto | None:
    if node.op_type != "Mul" or node.domain not in ("", "ai.onnx"):
        return None
    for k in (0, 1):
        x, half = node.input[k], g.made(node.input[1 - k], "Mul")
        one_plus = _pair(g, half, 0.5) if half is not None else None
        add = g.made(one_plus, "Add") if one_plus else None
        tanh_out = _pair(g, add, 1.0) if add is not None else None
        tanh = g.made(tanh_out, "Tanh") if tanh_out else None
        scaled = g.made(tanh.input[0], "Mul") if tanh is not None else None
        inner_out = _pair(g, scaled, math.sqrt(2 / math.pi)) if scaled is not None else None
        inner = g.made(inner_out, "Add") if inner_out else None
        if inner is None or x not in inner.input:
            continue
        cubic = g.made(inner.input[1] if inner.input[0] == x else inner.input[0], "Mul")
        cube_out = _pair(g, cubic, 0.044715) if cubic is not None else None
        cube = g.made(cube_out, "Mul") if cube_out else None
        square = g.made(cube.input[0], "Mul") if cube is not None else None
        if (square is not None and cube is not None and list(square.input) == [x, x] and cube.input[1] == x
                and shapes.get(x) is not None and shapes.get(x) == shapes.get(node.output[0])):
            return helper.make_node("Gelu", [x], [node.output[0]], approximate="tanh")
    return None


def _layer_norm(g: _Graph, node: onnx.NodeProto, shapes: dict[str, Shape]) -> onnx.NodeProto | None:
    if node.domain not in ("", "ai.onnx") or node.op_type not in ("Add", "Mul"):
        return None
    bias = scale = None
    top = node
    if node.op_type == "Add":
        bias, inner = _vector_operand(g, node)
        scaled = g.made(inner, "Mul") if inner else None
        if scaled is None:
            return None
        top = scaled
    scale, normed_name = _vector_operand(g, top)
    normed = g.made(normed_name, "Mul") if normed_name else None
    if normed is None or (bias is None and scale is None):
        normed, scale = top, None
    matched = _normalized(g, normed)
    if matched is None:
        return None
    x, axis, n, epsilon = matched
    shape = shapes.get(x)
    if shape is None or axis != len(shape) - 1 or shape[-1] != n or shapes.get(node.output[0]) != shape:
        return None
    if any(v is not None and g_len(g, v) != n for v in (scale, bias)):
        return None
    if scale is None:
        scale = f"{node.output[0]}_ones"
        g.graph.initializer.append(numpy_helper.from_array(np.ones(n, np.float32), scale))
    return helper.make_node("LayerNormalization", [x, scale, *([bias] if bias else [])], [node.output[0]],
                            axis=axis, epsilon=epsilon)


def g_len(g: _Graph, name: str) -> int | None:
    """The length of a 1-D weight or constant."""
    dims = g.external.get(name) or (g.constants[name].shape if name in g.constants else None)
    return int(dims[0]) if dims is not None and len(dims) == 1 else None


def _vector_operand(g: _Graph, node: onnx.NodeProto) -> tuple[str | None, str | None]:
    """For ``node(y, Unsqueeze(v, leading axes))`` (either order): ``v`` (1-D) and ``y``."""
    for k in (0, 1):
        unsqueeze = g.made(node.input[k], "Unsqueeze", readers=None)
        if unsqueeze is None:
            continue
        vector = unsqueeze.input[0]
        axes = g.ints(unsqueeze.input[1])
        if g_len(g, vector) is not None and axes is not None and axes == list(range(len(axes))):
            return vector, str(node.input[1 - k])
    return None, None


def _normalized(g: _Graph, node: onnx.NodeProto) -> tuple[str, int, int, float] | None:
    """``(x, axis, n, eps)`` where ``node`` is ``Mul(x - mean, rsqrt(var + eps))`` over ``axis`` of size ``n``."""
    if node.op_type != "Mul":
        return None
    d_name, rsqrt = node.input[0], g.made(node.input[1], "Reciprocal")
    sqrt = g.made(rsqrt.input[0], "Sqrt") if rsqrt is not None else None
    add = g.made(sqrt.input[0], "Add") if sqrt is not None else None
    if add is None or g.scalar(add.input[1]) is None:
        return None
    epsilon = float(g.scalar(add.input[1]) or 0.0)
    variance = g.made(add.input[0], "Div")
    sub = g.made(d_name, "Sub", readers=3)
    if variance is None or sub is None:
        return None
    x, mean = sub.input
    mean_div = g.made(mean, "Div")
    if mean_div is None:
        return None
    n = g.scalar(mean_div.input[1])
    if n is None or g.scalar(variance.input[1]) != n or n != int(n):
        return None
    square_sum = g.made(variance.input[0], "Unsqueeze")
    axes = g.ints(square_sum.input[1]) if square_sum is not None else None
    if axes is None or len(axes) != 1:
        return None
    summed = _unsqueezed(g, variance.input[0], "ReduceSum", axes)
    total = _unsqueezed(g, mean_div.input[0], "ReduceSum", axes)
    square = g.made(summed.input[0], "Mul") if summed is not None else None
    if (square is None or list(square.input) != [d_name, d_name] or total is None or total.input[0] != x
            or g.made(mean_div.input[0], "Unsqueeze") is None):
        return None
    return str(x), axes[0], int(n), epsilon
