"""What running an ``.onnx`` file needs to know of it, read from protobuf's wire format with the standard library.

ONNX Runtime needs no ``onnx`` package to run a model, and importing it
costs a fresh process more than ONNX Runtime's own import (about 60 ms on a
quiet machine, with ``importlib.metadata`` and ``email`` behind it). Before
a model is opened, jaxport must see every external-data location in it
(:mod:`.runtime` refuses the ones outside the directory's files), and the
names of the graph's inputs and outputs and its metadata. Those are a few
fields of a few messages of ``onnx.proto``; this module reads exactly them
and skips the rest by wire type.

It reads what a protobuf parser would, or more: a message field that appears
twice is read both times (protobuf merges them, so their repeated fields
join), and every value of an external-data entry whose key is ever
``location`` is a location, whatever the order. Every message that may hold
a ``TensorProto`` is walked: the graph's initializers and sparse
initializers, every node's attributes (``t``, ``tensors``, ``sparse_tensor``,
``sparse_tensors``, and the subgraphs ``g`` and ``graphs``, nested to
:data:`MAX_DEPTH`), functions (their nodes and attribute defaults) and
training information. Damaged bytes (a varint that does not end, a length
past the end, a wire type ONNX does not use) are a :class:`WireError`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

#: How deeply graphs may nest in node attributes (ONNX's own checker allows far less in practice).
MAX_DEPTH: Final = 64

_VARINT, _FIXED64, _LENGTH, _FIXED32 = 0, 1, 2, 5

# Field numbers of onnx.proto (ir_version 10).
_MODEL_GRAPH, _MODEL_METADATA, _MODEL_TRAINING, _MODEL_FUNCTIONS = 7, 14, 20, 25
_TRAINING_GRAPHS = (1, 2)  # initialization, algorithm
_GRAPH_NODE, _GRAPH_INITIALIZER, _GRAPH_INPUT, _GRAPH_OUTPUT, _GRAPH_SPARSE = 1, 5, 11, 12, 15
_NODE_ATTRIBUTE = 5
_FUNCTION_NODE, _FUNCTION_ATTRIBUTE = 7, 11
_ATTRIBUTE_TENSORS = (5, 10)  # t, tensors
_ATTRIBUTE_GRAPHS = (6, 11)  # g, graphs
_ATTRIBUTE_SPARSE = (22, 23)  # sparse_tensor, sparse_tensors
_SPARSE_TENSORS = (1, 2)  # values, indices
_TENSOR_NAME, _TENSOR_EXTERNAL = 8, 13
_VALUE_NAME = 1
_ENTRY_KEY, _ENTRY_VALUE = 1, 2


class WireError(ValueError):
    """The bytes are not a protobuf message of the expected shape."""


@dataclass(frozen=True, slots=True)
class ExternalTensor:
    """A tensor that names external data: its name and every location it gives (raw bytes)."""

    name: str
    locations: tuple[bytes, ...]


@dataclass(slots=True)
class ModelFacts:
    """What :func:`read_model` finds in a model.

    Attributes:
        inputs, outputs: the names of the main graph's inputs and outputs, in order.
        initializers: the names of its initializers (an input may also be one).
        metadata: the model's ``metadata_props``.
        external: every tensor, anywhere in the model, that names external data.
    """

    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    initializers: set[str] = field(default_factory=set)
    metadata: dict[str, str] = field(default_factory=dict)
    external: list[ExternalTensor] = field(default_factory=list)


def read_model(data: bytes) -> ModelFacts:
    """The :class:`ModelFacts` of a serialized ``ModelProto``.

    Raises:
        WireError: the bytes are damaged or nest graphs deeper than :data:`MAX_DEPTH`.
    """
    facts = ModelFacts()
    view = memoryview(data)
    for number, value in _fields(view):
        if number == _MODEL_GRAPH:
            _graph(_message(value), facts, 0, main=True)
        elif number == _MODEL_METADATA:
            key, text = _entry(_message(value))
            facts.metadata[_text(key[-1] if key else b"")] = _text(text[-1] if text else b"")
        elif number == _MODEL_TRAINING:
            for inner, graph in _fields(_message(value)):
                if inner in _TRAINING_GRAPHS:
                    _graph(_message(graph), facts, 1, main=False)
        elif number == _MODEL_FUNCTIONS:
            for inner, item in _fields(_message(value)):
                if inner == _FUNCTION_NODE:
                    _node(_message(item), facts, 1)
                elif inner == _FUNCTION_ATTRIBUTE:
                    _attribute(_message(item), facts, 1)
    return facts


def _graph(view: memoryview, facts: ModelFacts, depth: int, *, main: bool) -> None:
    if depth > MAX_DEPTH:
        raise WireError(f"graphs nest deeper than {MAX_DEPTH}")
    for number, value in _fields(view):
        if number == _GRAPH_NODE:
            _node(_message(value), facts, depth)
        elif number == _GRAPH_INITIALIZER:
            name = _tensor(_message(value), facts)
            if main:
                facts.initializers.add(name)
        elif number == _GRAPH_SPARSE:
            _sparse(_message(value), facts)
        elif main and number in (_GRAPH_INPUT, _GRAPH_OUTPUT):
            names = [v for n, v in _fields(_message(value)) if n == _VALUE_NAME]
            (facts.inputs if number == _GRAPH_INPUT else facts.outputs).append(
                _text(_message(names[-1])) if names else "")


def _node(view: memoryview, facts: ModelFacts, depth: int) -> None:
    for number, value in _fields(view):
        if number == _NODE_ATTRIBUTE:
            _attribute(_message(value), facts, depth)


def _attribute(view: memoryview, facts: ModelFacts, depth: int) -> None:
    for number, value in _fields(view):
        if number in _ATTRIBUTE_TENSORS:
            _tensor(_message(value), facts)
        elif number in _ATTRIBUTE_SPARSE:
            _sparse(_message(value), facts)
        elif number in _ATTRIBUTE_GRAPHS:
            _graph(_message(value), facts, depth + 1, main=False)


def _sparse(view: memoryview, facts: ModelFacts) -> None:
    for number, value in _fields(view):
        if number in _SPARSE_TENSORS:
            _tensor(_message(value), facts)


def _tensor(view: memoryview, facts: ModelFacts) -> str:
    """Reads one TensorProto into ``facts`` (when it names external data); its name."""
    names = _strings(view, _TENSOR_NAME)
    locations: list[bytes] = []
    external = False
    for number, value in _fields(view):
        if number == _TENSOR_EXTERNAL:
            external = True
            keys, values = _entry(_message(value))
            if b"location" in keys:
                locations.extend(values)
    name = _text(names[-1] if names else b"")
    if external:
        facts.external.append(ExternalTensor(name, tuple(locations)))
    return name


def _entry(view: memoryview) -> tuple[list[bytes], list[bytes]]:
    """Every key and every value of one StringStringEntryProto."""
    return _strings(view, _ENTRY_KEY), _strings(view, _ENTRY_VALUE)


def _strings(view: memoryview, number: int) -> list[bytes]:
    """The value of every field ``number`` of a message, each a string (or message) as bytes."""
    return [bytes(_message(value)) for n, value in _fields(view) if n == number]


def _text(data: bytes | memoryview) -> str:
    return bytes(data).decode("utf-8", "backslashreplace")


def _message(value: int | memoryview) -> memoryview:
    if isinstance(value, int):
        raise WireError("a field that holds a message or a string is not length-delimited")
    return value


def _fields(view: memoryview) -> Iterator[tuple[int, int | memoryview]]:
    """(field number, value) of each field of a message: a length-delimited value as a view, else an int."""
    at, end = 0, len(view)
    while at < end:
        key, at = _varint(view, at)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise WireError("field number 0")
        if wire == _VARINT:
            value, at = _varint(view, at)
            yield number, value
        elif wire == _LENGTH:
            size, at = _varint(view, at)
            if size > end - at:
                raise WireError(f"a field of {size} bytes at byte {at} runs past the end ({end})")
            yield number, view[at:at + size]
            at += size
        elif wire in (_FIXED64, _FIXED32):
            at += 8 if wire == _FIXED64 else 4
            if at > end:
                raise WireError("a fixed-size field runs past the end")
        else:
            raise WireError(f"wire type {wire} (groups), which ONNX does not use")


def _varint(view: memoryview, at: int) -> tuple[int, int]:
    value = shift = 0
    while at < len(view):
        byte = view[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7
        if shift >= 64:
            raise WireError("a varint longer than 10 bytes")
    raise WireError("a varint runs past the end")
