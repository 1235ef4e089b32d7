"""LiteRT's ``float16``: every float32 constant buffer of a ``.tflite`` model stored as float16; and the
gather tables that ai-edge-quantizer's int8 recipes leave in float32, as int8.

Each float32 constant tensor keeps its name and its consumers, and becomes
the output of a ``DEQUANTIZE`` operator (version 3: float16 to float32) whose
input is a new float16 constant: the form LiteRT's own float16 post-training
quantization writes, which the interpreter (and XNNPACK, which folds it into
its weights once) runs. Every constant is converted, whatever reads it: a
tied embedding's gather table as well as its fully connected layer. The
float32 bytes are dropped. Uses ``ai_edge_litert``'s flatbuffer object API
(the ``ai-edge-litert`` package of the extra).

ai-edge-quantizer quantizes fully connected layers and convolutions, not
``GATHER`` (nor ``GATHER_ND``): a tied embedding's table is duplicated, and its gather's copy
left in float32. :func:`gather_tables_to_int8` stores those as int8, one
scale per row (``DEQUANTIZE`` version 4 reads int8 per channel).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .schema import flatbuffer_utils, schema

#: DEQUANTIZE's version that reads float16 and int8 per channel.
DEQUANTIZE_VERSION = 4


def constants_to_float16(model: bytes) -> bytes:
    """``model`` with every float32 constant stored as float16 and dequantized once, at the start."""
    return _stored_narrower(model, lambda tree, subgraph, index: True, _to_float16)


_GATHERS = (schema.BuiltinOperator.GATHER, schema.BuiltinOperator.GATHER_ND)


def gather_tables_to_int8(model: bytes) -> bytes:
    """``model`` with each float32 matrix that only ``GATHER`` and ``GATHER_ND`` operators read stored as int8, one scale a row."""
    def only_gathered(tree: Any, subgraph: Any, index: int) -> bool:
        readers = [o for o in subgraph.operators or [] if index in list(o.inputs)]
        codes = [tree.operatorCodes[o.opcodeIndex] for o in readers]
        return bool(readers) and len(subgraph.tensors[index].shape) == 2 and \
            all(max(c.builtinCode, c.deprecatedBuiltinCode) in _GATHERS for c in codes) and \
            all(list(o.inputs).index(index) == 0 for o in readers)

    return _stored_narrower(model, only_gathered, _to_int8, _same_int8)


def _to_float16(values: np.ndarray, shape: Any) -> tuple[int, np.ndarray, Any]:
    return schema.TensorType.FLOAT16, values.astype(np.float16).view(np.uint8), None


def _to_int8(values: np.ndarray, shape: Any) -> tuple[int, np.ndarray, Any]:
    rows = values.reshape(int(shape[0]), -1)
    amax = np.abs(rows).max(axis=1)
    scale = np.where(amax > 0, amax, 1.0).astype(np.float32) / 127
    q = np.clip(np.rint(rows / scale[:, None]), -127, 127).astype(np.int8)
    params = schema.QuantizationParametersT()
    params.scale, params.zeroPoint, params.quantizedDimension = list(map(float, scale)), [0] * len(scale), 0
    return schema.TensorType.INT8, q.reshape(-1).view(np.uint8), params


def _same_int8(tree: Any, subgraph: Any, values: np.ndarray, shape: Any) -> int | None:
    """An int8 constant of ``subgraph`` quantized per row that holds ``values`` rounded to nearest (the tied
    embedding's fully connected copy, which the gather's then reads too), or None."""
    rows = values.reshape(int(shape[0]), -1)
    for index, tensor in enumerate(subgraph.tensors):
        q = tensor.quantization
        if tensor.type != schema.TensorType.INT8 or list(tensor.shape) != list(shape) or q is None or \
                q.quantizedDimension != 0 or q.scale is None or len(q.scale) != rows.shape[0]:
            continue
        data = _constant(tree, tensor)
        scale = np.asarray(q.scale, np.float32)[:, None]
        if data is not None and np.all(np.abs(np.frombuffer(data, np.int8).reshape(rows.shape) * scale - rows)
                                       <= 0.501 * scale + 1e-7) and not np.any(np.asarray(q.zeroPoint if q.zeroPoint is not None else [0])):
            return index
    return None


def _stored_narrower(model: bytes, chosen: Any, narrow: Any, reuse: Any = None) -> bytes:
    """``model`` with each float32 constant that ``chosen(tree, subgraph, index)`` picks stored by ``narrow``
    (its values and shape -> type, bytes, quantization) and dequantized by a ``DEQUANTIZE`` at the start;
    ``reuse(tree, subgraph, values, shape)`` may name a constant that holds them so already."""
    tree: Any = flatbuffer_utils.read_model_from_bytearray(bytearray(model))  # offset buffers read in
    empty = next((i for i, b in enumerate(tree.buffers) if b.data is None or len(b.data) == 0), None)
    if empty is None:
        tree.buffers.append(schema.BufferT())
        empty = len(tree.buffers) - 1
    code = -1
    stored_as: dict[int, tuple[int, int, Any]] = {}  # a float32 buffer -> the narrow one, its type, quantization
    converted: set[int] = set()
    for subgraph in tree.subgraphs:
        first = []
        for index, tensor in enumerate(subgraph.tensors):
            if tensor.type != schema.TensorType.FLOAT32:
                continue
            data = _constant(tree, tensor)
            if data is None or not chosen(tree, subgraph, index):
                continue
            if code < 0:
                code = _operator_code(tree, schema.BuiltinOperator.DEQUANTIZE, DEQUANTIZE_VERSION)
            same = None if reuse is None else reuse(tree, subgraph, np.frombuffer(data, np.float32), tensor.shape)
            if same is None:
                if tensor.buffer not in stored_as:
                    kind, values, quantization = narrow(np.frombuffer(data, np.float32), tensor.shape)
                    buffer = schema.BufferT()
                    buffer.data = values
                    tree.buffers.append(buffer)
                    stored_as[tensor.buffer] = (len(tree.buffers) - 1, kind, quantization)
                buffer_index, kind, quantization = stored_as[tensor.buffer]
                stored = schema.TensorT()
                stored.name = (tensor.name or b"") + b"_stored" if isinstance(tensor.name, bytes) \
                    else f"{tensor.name or ''}_stored"
                stored.shape, stored.shapeSignature = tensor.shape, tensor.shapeSignature
                stored.type, stored.buffer, stored.quantization = kind, buffer_index, quantization
                subgraph.tensors.append(stored)
                same = len(subgraph.tensors) - 1
            converted.add(tensor.buffer)
            tensor.buffer = empty  # now an operator's output
            operator = schema.OperatorT()
            operator.opcodeIndex, operator.inputs, operator.outputs = code, [same], [index]
            first.append(operator)
        subgraph.operators = [*first, *(subgraph.operators or [])]
    for buffer in converted:
        tree.buffers[buffer].data = None
    return bytes(flatbuffer_utils.convert_object_to_bytearray(tree))


def _constant(tree: Any, tensor: Any) -> bytes | None:
    """The bytes of a constant tensor, None for one without data (an activation, an input)."""
    if not tensor.buffer or tensor.buffer >= len(tree.buffers):
        return None
    data = tree.buffers[tensor.buffer].data
    return None if data is None or len(data) == 0 else bytes(np.asarray(data, np.uint8))


def _operator_code(tree: Any, builtin: int, version: int) -> int:
    """The index of the model's operator code for ``builtin`` (added, or its version raised, as needed)."""
    for i, code in enumerate(tree.operatorCodes):
        if max(code.builtinCode, code.deprecatedBuiltinCode) == builtin:
            code.version = max(code.version, version)
            return i
    code = schema.OperatorCodeT()
    code.builtinCode, code.deprecatedBuiltinCode, code.version = builtin, min(builtin, 127), version
    tree.operatorCodes.append(code)
    return len(tree.operatorCodes) - 1
