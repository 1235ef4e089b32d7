"""The shapes of a translated graph's values, symbolic dimensions by name, and the values of its shape vectors.

ONNX's own shape inference loses a symbolic dimension at the first
``Reshape`` or ``Cast`` of a shape vector; the graphs translated from a
symbolic module compute their shapes exactly that way (``Shape``,
``Squeeze``, ``Cast``, ``Reshape``, ``Concat`` of dimension sizes). Here a
small interpretation follows them: every 1-D integer value whose elements
are known (an integer or a ``dim_param``) is kept, and each operator's
output shape is derived from its inputs' where every dimension is known.
An unknown shape is ``None``; a shape is only ever claimed where it is
exact, so a rewrite that asks for equal shapes never sees a wrong answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Union

import onnx
from onnx import TensorProto, helper, numpy_helper

Dim = Union[int, str]
Shape = tuple[Dim, ...]

#: Operators whose output has the shape of their first input.
SAME_SHAPE = frozenset({"Abs", "Acos", "Asin", "Atan", "Ceil", "Cos", "Cosh", "Erf", "Exp", "Floor", "Identity",
                        "IsInf", "IsNaN", "Log", "Neg", "Not", "Reciprocal", "Relu", "Round", "Sigmoid", "Sign",
                        "Sin", "Sinh", "Sqrt", "Tan", "Tanh", "Cast", "Softmax", "LayerNormalization", "Gelu",
                        "BitwiseNot"})
#: Elementwise operators with NumPy broadcasting over all their inputs.
BROADCASTING = frozenset({"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Where", "Equal", "Less",
                          "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor", "Mod",
                          "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor"})
_REDUCTIONS = frozenset({"ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceMean"})


def broadcast(shapes: Sequence[Shape]) -> Shape | None:
    """NumPy's broadcast of ``shapes``, or None where it cannot be told from the dimensions."""
    rank = max(len(s) for s in shapes)
    out: list[Dim] = []
    for axis in range(rank):
        dims = {s[axis - rank + len(s)] for s in shapes if axis - rank + len(s) >= 0} - {1}
        if not dims:
            out.append(1)
        elif len(dims) == 1:
            out.append(dims.pop())
        else:
            return None  # two symbols, or a symbol and an integer: not known equal
    return tuple(out)


class ShapeTable:
    """The shapes (and small integer vectors' elements) of every value of a graph, where known exactly."""

    def __init__(self, graph: onnx.GraphProto) -> None:
        self.shapes: dict[str, Shape] = {}
        self.values: dict[str, tuple[Dim, ...]] = {}
        for value in graph.input:
            shape = _declared(value)
            if shape is not None:
                self.shapes[value.name] = shape
        for tensor in graph.initializer:
            self.shapes[tensor.name] = tuple(int(d) for d in tensor.dims)
            if (tensor.data_location != TensorProto.EXTERNAL and len(tensor.dims) <= 1
                    and tensor.data_type in (TensorProto.INT32, TensorProto.INT64)):
                self.values[tensor.name] = tuple(int(v) for v in numpy_helper.to_array(tensor).reshape(-1))
        for node in graph.node:
            try:
                self._visit(node)
            except (IndexError, KeyError, TypeError, ValueError):  # an unusual attribute form: shape unknown
                continue

    def _visit(self, node: onnx.NodeProto) -> None:
        op, ins, out = node.op_type, list(node.input), node.output[0] if node.output else ""
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        shapes = [self.shapes.get(i) for i in ins]
        vals = [self.values.get(i) for i in ins]
        shape: Shape | None = None
        value: tuple[Dim, ...] | None = None
        if op in SAME_SHAPE and shapes and shapes[0] is not None:
            shape, value = shapes[0], vals[0] if op in ("Cast", "Identity") else None
        elif op in BROADCASTING and all(s is not None for s in shapes):
            shape = broadcast([s for s in shapes if s is not None])
        elif op == "Shape" and shapes[0] is not None:
            start, end = attrs.get("start", 0), attrs.get("end", len(shapes[0]))
            value = shapes[0][start:end]
            shape = (len(value),)
        elif op in ("Squeeze", "Unsqueeze", "Reshape", "Expand") and shapes[0] is not None:
            shape = self._reshaped(op, shapes[0], vals[1] if len(ins) > 1 else None, attrs)
            value = vals[0] if op != "Expand" else None
        elif op == "Concat" and all(s is not None for s in shapes):
            shape = self._concat([s for s in shapes if s is not None], attrs["axis"])
            if all(v is not None for v in vals):
                value = tuple(x for v in vals if v is not None for x in v)
        elif op in _REDUCTIONS and shapes[0] is not None and len(ins) > 1 and vals[1] is not None:
            axes = {int(a) % len(shapes[0]) for a in vals[1] if isinstance(a, int)}
            keep = attrs.get("keepdims", 1)
            shape = tuple(1 if i in axes else d for i, d in enumerate(shapes[0]) if keep or i not in axes)
        elif op == "Transpose" and shapes[0] is not None:
            perm = attrs.get("perm", list(reversed(range(len(shapes[0])))))
            shape = tuple(shapes[0][p] for p in perm)
        elif op == "MatMul" and shapes[0] is not None and shapes[1] is not None \
                and min(len(shapes[0]), len(shapes[1])) >= 2:
            batch = broadcast([shapes[0][:-2], shapes[1][:-2]])
            if batch is not None and shapes[0][-1] == shapes[1][-2]:
                shape = (*batch, shapes[0][-2], shapes[1][-1])
        elif op == "Gather" and shapes[0] is not None and shapes[1] is not None:
            axis = int(str(attrs.get("axis", 0))) % len(shapes[0])
            shape = (*shapes[0][:axis], *shapes[1], *shapes[0][axis + 1:])
        elif op == "Slice" and shapes[0] is not None and all(v is not None for v in vals[1:]):
            shape = _sliced(shapes[0], [v for v in vals[1:] if v is not None])
        elif op == "Range" and all(v is not None and len(v) == 1 and isinstance(v[0], int) for v in vals):
            start, limit, delta = (int(v[0]) for v in vals if v is not None)
            shape = (len(range(start, limit, delta)),) if delta else None
        if shape is not None:
            self.shapes[out] = shape
        if value is not None and len(value) <= 16:
            self.values[out] = value

    @staticmethod
    def _reshaped(op: str, shape: Shape, target: tuple[Dim, ...] | None, attrs: dict[str, object]) -> Shape | None:
        if op == "Expand":
            return None if target is None else broadcast([shape, target])
        if op == "Reshape":
            if target is None or any(d == -1 for d in target) or (0 in target and not attrs.get("allowzero")):
                return None
            return target
        if target is None:
            return None
        rank = len(shape) + (len(target) if op == "Unsqueeze" else 0)
        axes = sorted(int(a) % rank for a in target if isinstance(a, int))
        if op == "Squeeze":
            return tuple(d for i, d in enumerate(shape) if i not in axes)
        dims = iter(shape)
        return tuple(1 if i in axes else next(dims) for i in range(rank))

    @staticmethod
    def _concat(shapes: list[Shape], axis: object) -> Shape | None:
        if not isinstance(axis, int):
            return None
        axis %= len(shapes[0])
        sizes = [s[axis] for s in shapes]
        if not all(isinstance(d, int) for d in sizes) or len({s[:axis] + s[axis + 1:] for s in shapes}) != 1:
            return None
        return (*shapes[0][:axis], sum(int(d) for d in sizes), *shapes[0][axis + 1:])


def _sliced(shape: Shape, args: list[tuple[Dim, ...]]) -> Shape | None:
    """The shape ``Slice`` makes of ``shape`` for its starts, ends, axes and steps (where known)."""
    starts, ends = args[0], args[1]
    axes = args[2] if len(args) > 2 else tuple(range(len(starts)))
    steps = args[3] if len(args) > 3 else (1,) * len(starts)
    out = list(shape)
    for start, end, axis, step in zip(starts, ends, axes, steps):
        if not isinstance(axis, int):
            return None
        dim = shape[axis % len(shape)]
        if start == 0 and step == 1 and (end == dim or (isinstance(end, int) and end >= 2**62)):
            continue
        if not (isinstance(dim, int) and isinstance(start, int) and isinstance(end, int) and isinstance(step, int)):
            return None
        out[axis % len(shape)] = len(range(dim)[start:end:step])
    return tuple(out)


def _declared(value: onnx.ValueInfoProto) -> Shape | None:
    tensor = value.type.tensor_type
    if not tensor.HasField("shape"):
        return None
    dims: list[Dim] = []
    for d in tensor.shape.dim:
        if d.HasField("dim_value"):
            dims.append(int(d.dim_value))
        elif d.dim_param:
            dims.append(d.dim_param)
        else:
            return None
    return tuple(dims)
