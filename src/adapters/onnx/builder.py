"""The small builder that the ONNX translations of StableHLO operations write through.

A translation (see :mod:`jaxport.adapters.onnx.ops.table`) receives a :class:`GraphBuilder`, the
MLIR operation and the ONNX names of its operands, and returns the ONNX
names of its results. The builder only appends: nodes, constant
initializers, fresh names; it holds no state a translation could depend on
besides what it was given. Types are read from the MLIR values here, so
that translations speak NumPy dtypes and shapes (``None`` for a dimension
known only at run time).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from typing import Any, NoReturn

import numpy as np
import onnx
from jaxlib.mlir import ir
from onnx import TensorProto, helper, numpy_helper

from jaxport.domain.errors import UnsupportedOperationError
from jaxport.domain.targets.onnx import DEFAULT_OPSET

#: The name of this target in messages.
TARGET = "ONNX"

#: float16 and bfloat16 are computed in float32 inside the graph (ONNX Runtime's CPU provider has
#: kernels for neither but casts), rounded where the module converts to them and at the outputs.
_FLOATS = {"f16": np.float32, "bf16": np.float32, "f32": np.float32, "f64": np.float64}
#: The ONNX types a float16 or bfloat16 value is stored in (weights, outputs, rounding casts).
NARROW_FLOATS = {"f16": TensorProto.FLOAT16, "bf16": TensorProto.BFLOAT16}

#: The dtypes the translations name most.
BOOL, I32, I64, F32, F64 = (np.dtype(t) for t in (np.bool_, np.int32, np.int64, np.float32, np.float64))
Shape = tuple[int | None, ...]
#: A ``Loop``'s body: given the body's builder, the iteration's index and the carried values' names, the
#: carried values' next names (after, with :meth:`GraphBuilder.loop`'s ``go``, whether to run again).
LoopBody = Callable[["GraphBuilder", str, list[str]], list[str]]
_POSITION = re.compile(r'"([^"]+)":(\d+):(\d+)')
_NUMBER = re.compile(r"0x[0-9A-Fa-f]+|[-+]?(?:inf|nan|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)")


def element_dtype(element: ir.Type) -> np.dtype[Any] | None:
    """The NumPy dtype of an MLIR element type, or None for one ONNX Runtime has no NumPy type for."""
    text = str(element)
    if text in _FLOATS:
        return np.dtype(_FLOATS[text])
    if isinstance(element, ir.IntegerType):
        integer = ir.IntegerType(element)
        if integer.width == 1:
            return BOOL
        if integer.width in (8, 16, 32, 64):
            return np.dtype(f"{'u' if integer.is_unsigned else ''}int{integer.width}")
    return None


def narrow_float(value: Any) -> int | None:
    """The ONNX storage type of a float16 or bfloat16 tensor value (computed in float32 here), else None."""
    return NARROW_FLOATS.get(str(ir.RankedTensorType(value.type).element_type))


def dense_elements(text: str, storage: np.dtype[Any], word: Callable[[float], Any]) -> np.ndarray:
    """The elements of a dense attribute as MLIR prints it (``text``: the attribute, or an operation holding
    it), flat, as ``storage`` words: a hex blob of little-endian words, or numbers (``word`` of each; hex bits
    for NaN and the infinities). The bindings read neither bfloat16 nor complex attributes.

    Raises:
        ValueError: a form not read here.
    """
    blob = re.search(r'dense<"0x([0-9A-Fa-f]*)">', text)
    if blob:
        return np.frombuffer(bytes.fromhex(blob.group(1)), dtype=storage.newbyteorder("<")).astype(storage)
    inner = re.search(r"dense<(.*)>\s*:", text, re.S)
    if inner is None:
        raise ValueError(f"unread dense constant {text[:80]}")
    bits = np.dtype(f"uint{8 * storage.itemsize}")
    return np.array([np.array(int(t, 16), bits).view(storage) if t.startswith("0x") else word(float(t))
                     for t in _NUMBER.findall(inner.group(1))], storage)


def bfloat16_values(attr: Any) -> np.ndarray:
    """The elements of a bfloat16 dense attribute as float32, flat (NumPy's buffer protocol has no bfloat16).

    Raises:
        ValueError: a form :func:`dense_elements` does not read.
    """
    bits = dense_elements(str(attr), np.dtype(np.uint16), _bfloat16_bits)
    return (bits.astype(np.uint32) << 16).view(np.float32)


def _bfloat16_bits(value: float) -> int:
    """The bits of ``value`` rounded to bfloat16 (to nearest, ties to even)."""
    word = int(np.array(value, np.float32).view(np.uint32))
    return ((word + 0x7FFF + ((word >> 16) & 1)) >> 16) & 0xFFFF


def round_to(b: GraphBuilder, name: str, storage: int) -> str:
    """A float32 ``name`` rounded to float16 or bfloat16 (``storage``) and back, as a conversion rounds."""
    return b.one("Cast", [b.one("Cast", [name], to=storage)], to=TensorProto.FLOAT)


def onnx_type(dtype: np.dtype[Any]) -> int:
    """The ``TensorProto`` element type of a NumPy dtype."""
    return int(helper.np_dtype_to_tensor_dtype(np.dtype(dtype)))


def short_location(location: Any) -> str:
    """A source location as a reader finds it: the operation's name and the first file position.

    >>> short_location('loc("jit(f)/gather"(callsite("f"("m.py":5:8 to :37) at "<module>")))')
    'jit(f)/gather at m.py:5:8'
    """
    text = str(location)
    name = re.search(r'loc\("([^"]*)"', text)
    place = _POSITION.search(text)
    parts = [name.group(1)] if name else []
    if place:
        parts.append(f"{place.group(1)}:{place.group(2)}:{place.group(3)}")
    return " at ".join(parts) if parts else text


class GraphBuilder:
    """Nodes and constants of one ONNX graph, written by the translations in order.

    Args:
        function: the exported function's name, for messages.
        reserved: the names of the graph's inputs, weights and outputs (no value made here takes one).
    """

    def __init__(self, function: str, reserved: Collection[str] = ()) -> None:
        self.function = function
        self._reserved = set(reserved)
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._count = [0]
        self._int64_constants: dict[tuple[int, ...], str] = {}
        self._made: dict[tuple[Any, ...], list[str]] = {}
        #: The node that made each value of this graph, by name (what a translation may look back at).
        self.producers: dict[str, onnx.NodeProto] = {}
        #: The values of the constants made so far, by name (what a translation may fold on).
        self.known: dict[str, np.ndarray] = {}
        #: The operation being translated, and the calls it is inlined through, for :meth:`refuse`.
        self.current: ir.Operation | None = None
        self.call_sites: list[Any] = []
        #: Set by the walker: translates an MLIR block into a builder (arguments' names -> results' names).
        self.run_block: Callable[[GraphBuilder, Any, Sequence[str]], list[str]] | None = None
        #: The opset the model is written at (raised by :meth:`require_opset`; shared with subgraphs),
        #: and the newest it may be.
        self.opset = [DEFAULT_OPSET]
        self.max_opset = DEFAULT_OPSET

    def child(self) -> GraphBuilder:
        """A builder for a subgraph (a Loop's body, an If's branch): its own nodes, the rest shared.

        Names stay unique across the model, constants are the outer graph's
        initializers (a subgraph reads outer names).
        """
        sub = GraphBuilder(self.function, self._reserved)
        sub._count, sub._int64_constants, sub.initializers = self._count, self._int64_constants, self.initializers
        sub.call_sites, sub.run_block = self.call_sites, self.run_block
        sub.opset, sub.max_opset = self.opset, self.max_opset
        return sub

    def loop(self, trips: str, carried: Sequence[tuple[str, Any]], body: LoopBody, *, go: str = "") -> list[str]:
        """An ONNX ``Loop`` over ``carried``; returns the names of their last values.

        Args:
            trips: the number of iterations, an int64 scalar ("" for no bound: then ``go`` ends it).
            carried: each carried value's first name and its type: an MLIR value of its dtype and rank, or
                the pair ``(dtype, rank)``. Dimensions are declared unknown (a carried value may be shaped
                otherwise than the MLIR value it is typed by).
            body: builds one iteration in a child builder (:meth:`child`).
            go: a boolean scalar, whether to run the first iteration; given, the body's first result says
                whether to run the next.
        """
        child = self.child()
        index, condition = child.fresh("index"), child.fresh("condition")
        names = [child.fresh("carried") for _ in carried]
        results = body(child, index, names)
        again = condition
        if go:
            again, *results = results
        types = [_loop_type(like) for _, like in carried]
        inputs = [helper.make_tensor_value_info(index, TensorProto.INT64, []),
                  helper.make_tensor_value_info(condition, TensorProto.BOOL, []),
                  *(helper.make_tensor_value_info(n, t, [None] * r) for n, (t, r) in zip(names, types))]
        outputs = [helper.make_tensor_value_info(child.one("Identity", [again]), TensorProto.BOOL, []),
                   *(helper.make_tensor_value_info(child.one("Identity", [v]), t, [None] * r)
                     for v, (t, r) in zip(results, types))]
        graph = helper.make_graph(child.nodes, self.fresh("loop_body"), inputs, outputs)
        return self.node("Loop", [trips, go, *(n for n, _ in carried)], len(carried), body=graph)

    def run(self, block: Any, args: Sequence[str]) -> list[str]:
        """Translates an MLIR ``block`` (a region's: a body, a branch, a comparator) into this builder, its
        arguments named ``args``; the names of what it returns."""
        assert self.run_block is not None  # set by the walker
        return self.run_block(self, block, args)

    def require_opset(self, opset: int, operator: str) -> None:
        """The model needs ``opset`` (for ``operator``); refused where that is newer than :attr:`max_opset`."""
        if opset > self.max_opset:
            self.refuse(f"it needs ONNX's {operator} (opset {opset}), newer than the opset {self.max_opset} "
                        f"asked for")
        self.opset[0] = max(self.opset[0], opset)

    def fresh(self, hint: str) -> str:
        """A new value name."""
        self._count[0] += 1
        name = f"{hint}_{self._count[0]}"
        return name if name not in self._reserved else self.fresh(hint)

    def node(self, op_type: str, inputs: Sequence[str], outputs: int = 1, **attrs: Any) -> list[str]:
        """Appends one standard-domain node; returns the names of its outputs.

        A node equal to one made before (same operator, inputs and
        attributes) is not made again: its outputs are returned. Every
        operator written here is a function of its inputs, and a symbolic
        module recomputes the same shapes before each operation.
        """
        key = (op_type, tuple(inputs), outputs, tuple(sorted((k, repr(v)) for k, v in attrs.items())))
        made = self._made.get(key)
        if made is None:
            made = self._made[key] = [self.fresh(op_type.lower()) for _ in range(outputs)]
            self.nodes.append(helper.make_node(op_type, list(inputs), made, **attrs))
            self.producers.update((name, self.nodes[-1]) for name in made)
        return made

    def one(self, op_type: str, inputs: Sequence[str], **attrs: Any) -> str:
        """:meth:`node` with one output, returned as a name."""
        return self.node(op_type, inputs, **attrs)[0]

    def constant(self, array: np.ndarray, hint: str = "const") -> str:
        """A constant of the module, kept in the graph as an initializer."""
        name = self.fresh(hint)
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        self.known[name] = np.asarray(array)
        return name

    def int64s(self, values: Sequence[int]) -> str:
        """A 1-D int64 constant (shapes, axes, starts), one initializer per distinct value."""
        key = tuple(int(v) for v in values)
        if key not in self._int64_constants:
            self._int64_constants[key] = self.constant(np.array(key, dtype=np.int64), "ints")
        return self._int64_constants[key]

    def scalar(self, value: Any, dtype: np.dtype[Any]) -> str:
        """A 0-D constant of ``dtype``."""
        return self.constant(np.array(value, dtype=dtype), "scalar")

    def cast(self, name: str, dtype: np.dtype[Any], have: np.dtype[Any] | None = None) -> str:
        """``name`` cast to ``dtype``; ``name`` itself where ``have`` (its dtype, where given) is ``dtype``."""
        return name if have is not None and have == dtype else self.one("Cast", [name], to=onnx_type(dtype))

    def as_int64(self, name: str, value: Any) -> str:
        """A shape or index operand as int64 (ONNX's shape and index type)."""
        return name if tensor_dtype(value) == I64 else self.cast(name, I64)

    def refuse(self, detail: str = "") -> NoReturn:
        """Raises the typed error naming the current operation, the function and the location."""
        op = self.current
        if op is None:
            raise UnsupportedOperationError(TARGET, self.function, "(none)", "(unknown)", detail)
        raise UnsupportedOperationError(TARGET, self.function, operation_name(op), self._where(op), detail)

    def _where(self, op: Any) -> str:
        """The operation's location; where it has no source position, the nearest call's that has one."""
        where = short_location(op.location)
        if not _POSITION.search(str(op.location)):
            for site in reversed(self.call_sites):
                if _POSITION.search(str(site.location)):
                    return f"{where} (called at {short_location(site.location)})"
        return where


def _loop_type(like: Any) -> tuple[int, int]:
    """The ONNX element type and the rank of a carried value typed as :meth:`GraphBuilder.loop` says."""
    dtype, rank = like if isinstance(like, tuple) else (tensor_dtype(like), len(tensor_shape(like)))
    return onnx_type(dtype), rank


def operation_name(op: ir.Operation | ir.OpView) -> str:
    """An operation's name, with a custom call's target."""
    name = str(op.operation.name)  # not op.name: a composite's is its composite name
    if name == "stablehlo.custom_call":
        return f"{name} @{ir.StringAttr(op.attributes['call_target_name']).value}"
    if name == "stablehlo.composite":
        return f"{name} \"{ir.StringAttr(op.attributes['name']).value}\""
    return name


def tensor_shape(value: Any) -> Shape:
    """The shape of a ranked tensor value, None for a dynamic dimension."""
    ranked = ir.RankedTensorType(value.type)
    return tuple(None if ranked.is_dynamic_dim(i) else int(d) for i, d in enumerate(ranked.shape))


def tensor_dtype(value: Any) -> np.dtype[Any]:
    """The NumPy dtype of a tensor value (callers refuse first what :func:`element_dtype` cannot name)."""
    dtype = element_dtype(ir.RankedTensorType(value.type).element_type)
    if dtype is None:
        raise TypeError(f"no NumPy dtype for {value.type}")
    return dtype


def int_list(attr: Any) -> list[int]:
    """The integers of a dense array or dense elements attribute."""
    return [int(x) for x in attr]
