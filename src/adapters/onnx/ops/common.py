"""What the ONNX translation families share: the ``Translation`` type, compute dtypes, constants, reducer bodies.

A translation takes the graph builder, the StableHLO operation and the ONNX
names of its operands, and returns the ONNX names of its results. The
helpers read what several families ask of an operation: the dtype ONNX
Runtime's CPU kernels compute a dtype in, the value of a splat constant,
the ONNX operator a two-argument reducer body (``reduce``,
``reduce_window``, ``scatter``, ``select_and_scatter``) applies, its
identity and whether an init value is that, a comparison's direction; and
the walks of the MLIR module around an operation (its functions, the
operations nested in a region) that several families make.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from jaxport.adapters.onnx.builder import BOOL, I64, GraphBuilder, tensor_dtype

Translation = Callable[[GraphBuilder, Any, Sequence[str]], list[str]]

#: Dtypes ONNX Runtime's CPU kernels (``Pad``, ``Slice`` arithmetic, ``Max``, ...) do not all take:
#: computed in a wider one.
_WIDER = {np.dtype(np.int8): np.int32, np.dtype(np.int16): np.int32, np.dtype(np.uint8): np.int32,
          np.dtype(np.uint16): np.int32, np.dtype(np.uint32): np.int64, BOOL: np.int32,
          np.dtype(np.float16): np.float32}


#: The operations a body translated once on whole tensors may hold (elementwise on its 0-D arguments:
#: ``reduce_window``'s general bodies, ``scatter``'s applied ones).
ELEMENTWISE = frozenset(f"stablehlo.{name}" for name in (
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "abs", "negate", "exponential", "log",
    "log_plus_one", "exponential_minus_one", "compare", "select", "and", "or", "not", "xor", "is_finite",
    "constant", "convert", "sqrt", "rsqrt", "tanh", "logistic", "power", "remainder", "sign", "floor", "ceil",
    "clamp", "return"))


def wide_dtype(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """The dtype ONNX Runtime's CPU kernels compute ``dtype`` in here (itself, or one holding it exactly)."""
    return np.dtype(_WIDER.get(np.dtype(dtype), dtype))


def unsigned_of(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """The unsigned integer dtype of ``dtype``'s width (a cast between the two keeps the bits)."""
    return np.dtype(f"uint{dtype.itemsize * 8}")


def signed_of(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """The signed integer dtype of ``dtype``'s width."""
    return np.dtype(f"int{dtype.itemsize * 8}")


def reversed_along(b: GraphBuilder, x: str, axes: Sequence[int]) -> str:
    """``x`` with the order of its elements reversed along ``axes`` (a ``Slice`` of step -1)."""
    n = len(axes)
    return b.one("Slice", [x, b.int64s([-1] * n), b.int64s([np.iinfo(np.int64).min] * n), b.int64s(axes),
                           b.int64s([-1] * n)])


def stacked(b: GraphBuilder, parts: Sequence[str], axis: int = -1) -> str:
    """``parts`` (of one shape) stacked along a new dimension ``axis`` (-1: the last, 0: the first)."""
    at = b.int64s([axis])
    return b.one("Concat", [b.one("Unsqueeze", [p, at]) for p in parts], axis=axis)


def element(b: GraphBuilder, x: str, index: int, axis: int) -> str:
    """Element ``index`` of ``x`` along ``axis`` (that dimension dropped)."""
    return b.one("Gather", [x, b.constant(np.array(index, np.int64), "index")], axis=axis)


#: A comparison direction's ONNX operator (``NE`` is ``Not`` of ``Equal``).
_COMPARISONS = {"EQ": "Equal", "LT": "Less", "LE": "LessOrEqual", "GT": "Greater", "GE": "GreaterOrEqual"}


def direction(op: Any) -> str:
    """A ``compare``'s direction: ``"EQ"``, ``"NE"``, ``"LT"``, ``"LE"``, ``"GT"`` or ``"GE"``."""
    return str(stablehlo.ComparisonDirectionAttr(op.attributes["comparison_direction"]).value)


def compared(b: GraphBuilder, how: str, x: str, y: str) -> str:
    """``x`` compared with ``y`` in the direction ``how`` (:func:`direction`)."""
    return b.one("Not", [b.one("Equal", [x, y])]) if how == "NE" else b.one(_COMPARISONS[how], [x, y])


def same(op_type: str, *, floats: bool = False) -> Translation:
    """The translation of an operation that is the ONNX operator ``op_type`` on the same operands (``floats``:
    defined for floating-point operands only, others refused)."""
    def translate(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
        if floats and tensor_dtype(op.results[0]).kind != "f":
            b.refuse("defined here for floating-point operands only")
        return [b.one(op_type, args)]
    return translate

def transposed(b: GraphBuilder, x: str, perm: Sequence[int]) -> str:
    """``x`` transposed by ``perm`` (``x`` itself where that is the identity)."""
    return x if list(perm) == list(range(len(perm))) else b.one("Transpose", [x], perm=list(perm))


def put(b: GraphBuilder, x: str, positions: str, i: str, value: str, axis: int = -1) -> str:
    """``x`` with ``value`` (without ``x``'s dimension ``axis``) at the positions along ``axis`` where
    ``positions`` equals ``i``."""
    return b.one("Where", [b.one("Equal", [positions, i]), b.one("Unsqueeze", [value, b.int64s([axis])]), x])


def dim_size(b: GraphBuilder, x: str, axis: int) -> str:
    """The size of ``x``'s dimension ``axis`` as an int64 scalar."""
    return b.one("Squeeze", [b.one("Shape", [x], start=axis, end=axis + 1), b.int64s([0])])


def iota_of(b: GraphBuilder, count: str) -> str:
    """``0, 1, ..., count - 1`` (int64) for an int64 scalar ``count``."""
    return b.one("Range", [b.scalar(0, I64), count, b.scalar(1, I64)])


#: Where's types in the CPU kernels of both ONNX Runtime and onnxruntime-web (WebAssembly, which lacks
#: int8, int16, uint16, uint32, uint64 and bool); the others select in a wider type that holds them exactly
#: (uint64 in int64: a cast between integers of one width keeps the bits, as the shifts rely on too).
_WHERE_TYPES = {np.dtype(t) for t in (np.uint8, np.int32, np.int64, np.float32, np.float64)}
_WHERE_WIDER = {BOOL: np.uint8, np.dtype(np.int8): np.int32, np.dtype(np.int16): np.int32,
                np.dtype(np.uint16): np.int32, np.dtype(np.uint32): np.int64, np.dtype(np.uint64): np.int64,
                np.dtype(np.float16): np.float32}


def where_selects(dtype: np.dtype[Any]) -> bool:
    """Whether :func:`where` can select ``dtype`` in a type both runtimes' ``Where`` takes."""
    return np.dtype(dtype) in _WHERE_TYPES or np.dtype(dtype) in _WHERE_WIDER


def where(b: GraphBuilder, condition: str, x: str, y: str, dtype: np.dtype[Any]) -> str:
    """``Where(condition, x, y)`` of ``dtype`` tensors, selected in a type both runtimes' kernels take."""
    dtype = np.dtype(dtype)
    if dtype in _WHERE_TYPES or dtype not in _WHERE_WIDER:
        return b.one("Where", [condition, x, y])
    wide = np.dtype(_WHERE_WIDER[dtype])
    return b.cast(b.one("Where", [condition, b.cast(x, wide), b.cast(y, wide)]), dtype)


def splat_value(value: Any) -> float | int | bool | None:
    """The value of a splat ``stablehlo.constant`` producing ``value``, else None."""
    owner = value.owner
    if not isinstance(owner, (ir.Operation, ir.OpView)) or owner.name != "stablehlo.constant":
        return None
    attr = ir.DenseElementsAttr(owner.attributes["value"])
    if not attr.is_splat:
        return None
    splat = attr.get_splat_value()
    if isinstance(splat, ir.FloatAttr) or isinstance(getattr(splat, "type", None), ir.FloatType):
        return float(ir.FloatAttr(splat).value)
    number = int(ir.IntegerAttr(splat).value)
    return bool(number) if tensor_dtype(value) == BOOL else number


#: The reducer bodies' operations, as ONNX's elementwise operator of the same meaning.
_REDUCERS = {"stablehlo.add": "Add", "stablehlo.maximum": "Max", "stablehlo.minimum": "Min",
             "stablehlo.multiply": "Mul", "stablehlo.and": "And", "stablehlo.or": "Or"}


def reducer(op: Any, region: int = 0) -> str | None:
    """The ONNX operator of a two-argument body ``op.regions[region]`` that is one of :data:`_REDUCERS`."""
    return block_reducer(op.regions[region].blocks[0])


def block_reducer(block: Any, operators: Mapping[str, str] = _REDUCERS) -> str | None:
    """The ONNX operator (of ``operators``: operation name -> operator) of a two-argument block that returns
    one operation of its two arguments."""
    body = list(block.operations)
    if len(body) != 2 or len(block.arguments) != 2:
        return None
    first, ret = body
    if list(ret.operands) != list(first.results) or set(first.operands) != set(block.arguments):
        return None
    return operators.get(first.operation.name)


_IDENTITIES: dict[str, Any] = {"Add": 0, "Mul": 1, "And": True, "Or": False}


def identity_of(kind: str, dtype: np.dtype[Any]) -> Any:
    """The value leaving a ``kind`` reduction of ``dtype`` unchanged (booleans: min is and, max is or)."""
    if dtype == BOOL:
        return kind in ("Min", "And", "Mul")
    if kind in _IDENTITIES:
        return _IDENTITIES[kind]
    if dtype.kind == "f":
        return -np.inf if kind == "Max" else np.inf
    return np.iinfo(dtype).min if kind == "Max" else np.iinfo(dtype).max


def is_identity(kind: str, init: Any) -> bool:
    """Whether ``init`` is a constant leaving a ``kind`` reduction unchanged (:func:`identity_of`)."""
    value = splat_value(init)
    return value is not None and bool(value == identity_of(kind, tensor_dtype(init)))


def operation(x: Any) -> Any:
    """The ``ir.Operation`` of an operation or its ``OpView``."""
    return x.operation if hasattr(x, "operation") else x


def nested(op: Any) -> Iterator[Any]:
    """The operations inside ``op``'s regions, at any depth, each before those inside it."""
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                yield operation(inner)
                yield from nested(operation(inner))


def module_of(op: Any) -> Any:
    """The top operation (the ``builtin.module``) holding ``op``."""
    while op.parent is not None:
        op = operation(op.parent)
    return op


def function_named(op: Any, name: str) -> Any:
    """The ``func.func`` named ``name`` in the module holding ``op``, or None."""
    for child in map(operation, module_of(op).regions[0].blocks[0].operations):
        if child.name == "func.func" and ir.StringAttr(child.attributes["sym_name"]).value == name:
            return child
    return None


def is_private(function: Any) -> bool:
    """Whether a ``func.func`` is private (not one of the module's entry points)."""
    visibility = function.attributes["sym_visibility"] if "sym_visibility" in function.attributes else None
    return visibility is not None and ir.StringAttr(visibility).value == "private"
