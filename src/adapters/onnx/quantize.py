"""The ONNX target's weight quantization (``int8-weights``, ``int8-dynamic``, ``int4-weights``) in ``ai.onnx``.

A translated model reads each weight as an external initializer named
``weights:KEY``. A float32 matrix whose every use is a matrix product
(``MatMul``'s second operand, directly or through a ``Transpose``, or
``Gemm``'s: a tied embedding's output projection) or an embedding gather (``Gather`` along
axis 0) is quantized, symmetrically (no zero point), to nearest, unless the
caller keeps it in float (``keep``):

* ``int8-weights``: int8 with one float32 scale per output channel (a
  product's output column, an embedding's row: one choice serves a tied
  embedding's gather and its output projection), the activations left in
  float32: a product reads the matrix as ``Cast`` and ``Mul`` by its scales
  (constants, which ONNX Runtime folds into a float32 matrix when it opens the
  model), a gather gathers the int8 rows and their scales. The error is
  round-to-nearest's, no more: the file is about 4x smaller, a call as fast as
  float32's. (``DequantizeLinear`` in its place is fused by ONNX Runtime into
  ``MatMulNBits``, which quantizes the activations too: 1.1-1.3x the error.)
* ``int8-dynamic``: the same int8 matrices, each product as
  ``DynamicQuantizeLinear`` of its activations (one scale per call),
  ``MatMulInteger`` and one ``Mul`` by the activations' scale times the
  channels' scales, as ONNX Runtime's ``quantize_dynamic`` writes (it fuses
  them into its int8 kernels). (Measured on the benchmarks' GPT-small with
  ONNX Runtime 1.32: about 0.5x of float32 per call, at 1.5-1.8x
  round-to-nearest's error.)
* ``int4-weights``: int4 in blocks of :data:`~jaxport.domain.targets.onnx.INT4_BLOCK`
  along the reduction (an embedding's width), one float32 scale per block:
  one ``DequantizeLinear`` with ``block_size`` (opset 21) in place of the
  initializer, which ONNX Runtime fuses with a product into its 4-bit kernel.

Every other weight is kept as it is stored. All the weights the models read
go, in their stored or quantized form, into the directory's own weights
file (:func:`weights_file_name`): the float32 file is not copied beside it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import BinaryIO

import numpy as np
import onnx
from onnx import TensorProto, helper

from jaxport.domain.bundle.manifest import WeightRecord
from jaxport.domain.converted.quantization import INT4_WEIGHTS, INT8, INT8_WEIGHTS
from jaxport.domain.targets.onnx import INT4_BLOCK
from jaxport.adapters.storage.safetensors_file import encode_header, raw_bytes, write_weights
from .fuse import attribute

#: The prefix of a weight's initializer (``weights:KEY``).
PREFIX = "weights:"
#: int4's range, symmetric around zero (the scale maps the block's largest magnitude to 7).
INT4_MAX, INT8_MAX = 7, 127


def weights_file_name(mode: str) -> str:
    """The quantized directory's weights file: ``params.int8.safetensors``, ``params.int4.safetensors``."""
    return f"params.{mode.split('-')[0]}.safetensors"


def quantize_int8(w: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """``w`` (2-D) to nearest int8 with one scale per index of ``axis`` (its output channels)."""
    amax = np.abs(w).max(axis=1 - axis)
    scale = (np.where(amax > 0, amax, 1.0) / INT8_MAX).astype(np.float32)
    shaped = scale[None, :] if axis == 1 else scale[:, None]
    return np.clip(np.rint(w / shaped), -INT8_MAX, INT8_MAX).astype(np.int8), scale


def quantize_int4(w: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """``w`` (2-D) to nearest int4 (as int8 values) in blocks of ``INT4_BLOCK`` along ``axis`` (the reduction),
    one scale per block: the scales' shape is ``w``'s with ``ceil(n / block)`` along ``axis``."""
    moved = np.moveaxis(w, axis, 1)
    rows, n = moved.shape
    padded = np.zeros((rows, -(-n // INT4_BLOCK) * INT4_BLOCK), np.float32)
    padded[:, :n] = moved
    blocks = padded.reshape(rows, -1, INT4_BLOCK)
    amax = np.abs(blocks).max(axis=2)
    scale = (np.where(amax > 0, amax, 1.0) / INT4_MAX).astype(np.float32)
    q = np.clip(np.rint(blocks / scale[:, :, None]), -8, INT4_MAX).astype(np.int8).reshape(rows, -1)[:, :n]
    return np.moveaxis(q, 1, axis), np.moveaxis(scale, 1, axis)


def pack_int4(q: np.ndarray) -> np.ndarray:
    """int4 values (as int8) packed two a byte, the first in the low nibble, as ONNX stores them."""
    flat = (q.reshape(-1).astype(np.int16) & 0x0F).astype(np.uint8)
    if flat.size % 2:
        flat = np.append(flat, np.uint8(0))
    return flat[0::2] | (flat[1::2] << 4)


def inline(tensor: onnx.TensorProto, data: bytes) -> None:
    """Puts ``data`` in ``tensor`` itself, in place of the external data it named."""
    tensor.raw_data = data
    tensor.data_location = TensorProto.DEFAULT
    del tensor.external_data[:]


@dataclass
class WeightsStore:
    """The tensors of the directory's weights file, gathered from every model, then written once."""

    tensors: dict[str, tuple[str, tuple[int, ...], memoryview]] = field(default_factory=dict)
    refs: dict[str, str] = field(default_factory=dict)

    def external(self, proto: onnx.TensorProto, key: str, dtype: str, data: np.ndarray) -> onnx.TensorProto:
        """``proto`` made to read ``data`` (stored under ``key``) from the file, once it is written."""
        if key not in self.tensors:
            self.tensors[key] = (dtype, tuple(data.shape), raw_bytes(data))
        proto.data_location = TensorProto.EXTERNAL
        del proto.external_data[:]
        self.refs[proto.name] = key
        return proto

    def inline(self, model: onnx.ModelProto) -> None:
        """Puts the bytes of ``model``'s tensors in the model itself (a self-contained model, to measure)."""
        for proto in (t for t in model.graph.initializer if t.name in self.refs):
            inline(proto, bytes(self.tensors[self.refs[proto.name]][2]))

    def write(self, stream: BinaryIO, location: str, models: Sequence[onnx.ModelProto]) -> None:
        """Writes the file (safetensors) and points the models' tensors at their bytes in it."""
        keys = sorted(self.tensors)
        records = [WeightRecord(k, self.tensors[k][0], self.tensors[k][1], self.tensors[k][0], self.tensors[k][1])
                   for k in keys]
        header, order = encode_header(records, {})
        write_weights(stream, header, order, [self.tensors[k][2] for k in keys])
        offsets, at = {}, len(header)
        for i in order:
            offsets[keys[i]] = (at, len(self.tensors[keys[i]][2]))
            at += offsets[keys[i]][1]
        for proto in (t for m in models for t in m.graph.initializer if t.name in self.refs):
            offset, length = offsets[self.refs[proto.name]]
            for name, value in (("location", location), ("offset", str(offset)), ("length", str(length))):
                entry = proto.external_data.add()
                entry.key, entry.value = name, value


def quantize_model(model: onnx.ModelProto, mode: str, value: Callable[[str], np.ndarray],
                   store: WeightsStore, ranges: Mapping[str, tuple[float, float]] | None = None,
                   keep: Callable[[str], bool] = lambda key: False) -> None:
    """Quantizes ``model``'s weights in place (see the module's docstring), but those whose key ``keep``
    accepts; ``value`` gives a weight's stored array by its key; every weight initializer then reads from
    ``store``'s file. For ``int8``, ``ranges`` are the calibrated ranges of the products' activations
    (:func:`activations`)."""
    graph = model.graph
    edit = _Edit(list(graph.node))
    kept: list[onnx.TensorProto] = []
    for init in list(graph.initializer):
        if not init.name.startswith(PREFIX) or init.data_location != TensorProto.EXTERNAL:
            kept.append(init)
            continue
        key = init.name.removeprefix(PREFIX)
        array = np.asarray(value(key))
        axis = None if keep(key) else _channel_axis(init, edit, mode)
        if axis is None:
            kept.append(store.external(init, key, str(array.dtype), array))
        elif mode == INT8_WEIGHTS:
            kept.extend(_int8_weights(edit, init.name, key, array, axis, store))
        elif mode != INT4_WEIGHTS:
            kept.extend(_int8(edit, init.name, key, array, axis, store, ranges if mode == INT8 else None))
        else:
            kept.extend(_int4(edit, init.name, key, array, axis, store))
    del graph.initializer[:]
    graph.initializer.extend(kept)
    nodes = edit.nodes_in_order()
    del graph.node[:]
    graph.node.extend(nodes)


def candidates(model: onnx.ModelProto, mode: str) -> dict[str, int]:
    """The weights of ``model`` that ``mode`` quantizes (keys, in the model's order), each with its axis
    (:func:`quantize_int8`'s channels, :func:`quantize_int4`'s reduction)."""
    edit = _Edit(list(model.graph.node))
    found = {}
    for init in model.graph.initializer:
        if init.name.startswith(PREFIX) and init.data_location == TensorProto.EXTERNAL:
            axis = _channel_axis(init, edit, mode)
            if axis is not None:
                found[init.name.removeprefix(PREFIX)] = axis
    return found


def rounded(w: np.ndarray, mode: str, axis: int) -> np.ndarray:
    """``w`` as ``mode`` stores it, back in float32: the weight's own rounding error, and no other."""
    if mode == INT4_WEIGHTS:
        q, scale = quantize_int4(w, axis)
        scales = np.repeat(scale, INT4_BLOCK, axis=axis)[tuple(slice(0, n) for n in w.shape)]
    else:
        q, scale = quantize_int8(w, axis)
        scales = scale[:, None] if axis == 0 else scale[None, :]
    return np.asarray(q.astype(np.float32) * scales, np.float32)


class _Edit:
    """A graph's nodes, each of which may be replaced by others (in order), and new nodes first."""

    def __init__(self, nodes: list[onnx.NodeProto]) -> None:
        self.nodes = nodes
        self.first: list[onnx.NodeProto] = []
        self.instead: dict[int, list[onnx.NodeProto]] = {}
        self.uses: dict[str, list[tuple[int, int]]] = {}
        for at, node in enumerate(nodes):
            for i, name in enumerate(node.input):
                self.uses.setdefault(name, []).append((at, i))

    def nodes_in_order(self) -> list[onnx.NodeProto]:
        return [*self.first, *(n for at, node in enumerate(self.nodes) for n in self.instead.get(at, [node]))]


def _channel_axis(init: onnx.TensorProto, edit: _Edit, mode: str) -> int | None:
    """For int8: the axis of the weight's output channels; for int4: of its reduction; None: not quantized."""
    if init.data_type != TensorProto.FLOAT or len(init.dims) != 2 or not edit.uses.get(init.name):
        return None
    axes = set()
    for at, i in edit.uses[init.name]:
        node = edit.nodes[at]
        if node.op_type == "MatMul" and i == 1:
            axes.add(1 if mode != INT4_WEIGHTS else 0)
        elif node.op_type == "Gemm" and i == 1 and _plain_gemm(node):
            transposed = attribute(node, "transB", 0) == 1
            axes.add((0 if transposed else 1) if mode != INT4_WEIGHTS else (1 if transposed else 0))
        elif node.op_type == "Gather" and i == 0 and attribute(node, "axis", 0) == 0:
            axes.add(0 if mode != INT4_WEIGHTS else 1)
        elif node.op_type == "Transpose" and list(attribute(node, "perm", [1, 0])) == [1, 0] and \
                all(edit.nodes[n].op_type == "MatMul" and j == 1 for n, j in edit.uses.get(node.output[0], [])):
            axes.add(0 if mode != INT4_WEIGHTS else 1)
        else:
            return None
    return axes.pop() if len(axes) == 1 else None


def _plain_gemm(node: onnx.NodeProto) -> bool:
    """A Gemm that is a product (A not transposed, alpha 1, no C or beta 1): what int8 rewrites."""
    return attribute(node, "transA", 0) == 0 and attribute(node, "alpha", 1.0) == 1.0 and \
        (len(node.input) < 3 or not node.input[2] or attribute(node, "beta", 1.0) == 1.0)


def _tensor(name: str, data_type: int, shape: tuple[int, ...]) -> onnx.TensorProto:
    return TensorProto(name=name, data_type=data_type, dims=list(shape))


def activations(model: onnx.ModelProto) -> list[str]:
    """The values that ``int8`` calibrates: the first operand of each product (MatMul, Gemm)."""
    return list(dict.fromkeys(n.input[0] for n in model.graph.node if n.op_type in ("MatMul", "Gemm")))


def _int8(edit: _Edit, name: str, key: str, array: np.ndarray, axis: int, store: WeightsStore,
          ranges: Mapping[str, tuple[float, float]] | None) -> list[onnx.TensorProto]:
    """int8 per channel: each product through ``MatMulInteger`` (or, calibrated, in QDQ form), each
    gather on the int8 rows."""
    q, scale = quantize_int8(array, axis)
    qname, sname, last = f"{name}#int8", f"{name}#scale", f"{name}#last"
    tensors = [store.external(_tensor(qname, TensorProto.INT8, q.shape), f"{key}#int8", "int8", q),
               store.external(_tensor(sname, TensorProto.FLOAT, scale.shape), f"{key}#scale", "float32", scale)]

    def product(node: onnx.NodeProto) -> list[onnx.NodeProto]:
        if ranges is None or node.input[0] not in ranges:
            return _integer_product(node, sname)
        nodes, constants = _static_product(node, sname, ranges[node.input[0]])
        tensors.extend(constants)
        return nodes

    for at, _ in edit.uses[name]:
        node = edit.nodes[at]
        if node.op_type == "Transpose":
            node.input[0] = qname  # the int8 matrix transposed: a constant ONNX Runtime folds
            for used, _ in edit.uses.get(node.output[0], []):
                edit.instead[used] = product(edit.nodes[used])
        elif node.op_type == "MatMul":
            node.input[1] = qname
            edit.instead[at] = product(node)
        elif node.op_type == "Gemm":  # A @ B (+ C), B the int8 matrix or its transpose
            y, bias = node.output[0], node.input[2] if len(node.input) > 2 and node.input[2] else ""
            matmul = helper.make_node("MatMul", [node.input[0], qname], [f"{y}#product" if bias else y])
            steps = []
            if attribute(node, "transB", 0) == 1:
                steps.append(helper.make_node("Transpose", [qname], [f"{y}#weight"], perm=[1, 0]))
                matmul.input[1] = f"{y}#weight"
            steps.extend(product(matmul))
            if bias:
                steps.append(helper.make_node("Add", [f"{y}#product", bias], [y]))
            edit.instead[at] = steps
        else:  # a Gather of rows: the int8 rows times their scales
            if not any(t.name == last for t in tensors):
                tensors.append(helper.make_tensor(last, TensorProto.INT64, [1], [-1]))
            rows = node.output[0]
            edit.instead[at] = [*_gathered_rows(node, qname, sname),
                                helper.make_node("Unsqueeze", [f"{rows}#scales", last], [f"{rows}#column"]),
                                helper.make_node("Mul", [f"{rows}#float", f"{rows}#column"], [rows])]
    return tensors


def _gathered_rows(node: onnx.NodeProto, qname: str, sname: str) -> list[onnx.NodeProto]:
    """The int8 rows a ``Gather`` (``node``) takes, as float (``ROWS#float``), and their scales (``ROWS#scales``)."""
    rows, ids = node.output[0], node.input[1]
    return [helper.make_node("Gather", [qname, ids], [f"{rows}#int8"], axis=0),
            helper.make_node("Gather", [sname, ids], [f"{rows}#scales"], axis=0),
            helper.make_node("Cast", [f"{rows}#int8"], [f"{rows}#float"], to=TensorProto.FLOAT)]


def _int8_weights(edit: _Edit, name: str, key: str, array: np.ndarray, axis: int,
                  store: WeightsStore) -> list[onnx.TensorProto]:
    """int8 per channel, the activations in float: the products read the matrix as ``Cast`` times its
    scales (shaped to broadcast along ``axis``), a gather the int8 rows times theirs."""
    q, scale = quantize_int8(array, axis)
    scale = scale[:, None] if axis == 0 else scale[None, :]
    qname, sname = f"{name}#int8", f"{name}#scale"
    products = False
    for at, _ in edit.uses[name]:
        node = edit.nodes[at]
        if node.op_type != "Gather":
            products = True
            continue
        rows = node.output[0]
        edit.instead[at] = [*_gathered_rows(node, qname, sname),
                            helper.make_node("Mul", [f"{rows}#float", f"{rows}#scales"], [rows])]
    if products:  # constants only: ONNX Runtime folds them into the float32 matrix once, at load
        edit.first.extend([helper.make_node("Cast", [qname], [f"{name}#float"], to=TensorProto.FLOAT),
                           helper.make_node("Mul", [f"{name}#float", sname], [name])])
    return [store.external(_tensor(qname, TensorProto.INT8, q.shape), f"{key}#int8", "int8", q),
            store.external(_tensor(sname, TensorProto.FLOAT, scale.shape), f"{key}#scale", "float32", scale)]


def _integer_product(node: onnx.NodeProto, scale: str) -> list[onnx.NodeProto]:
    """``node`` (a MatMul on an int8 matrix with channel scales ``scale``) as DynamicQuantizeLinear,
    MatMulInteger and the rescaling; its output keeps its name."""
    x, w, y = node.input[0], node.input[1], node.output[0]
    return [helper.make_node("DynamicQuantizeLinear", [x], [f"{y}#xq", f"{y}#xs", f"{y}#xz"]),
            helper.make_node("MatMulInteger", [f"{y}#xq", w, f"{y}#xz"], [f"{y}#acc"]),
            helper.make_node("Cast", [f"{y}#acc"], [f"{y}#accf"], to=TensorProto.FLOAT),
            helper.make_node("Mul", [f"{y}#xs", scale], [f"{y}#scale"]),
            helper.make_node("Mul", [f"{y}#accf", f"{y}#scale"], [y])]


def _static_product(node: onnx.NodeProto, scale: str,
                    calibrated: tuple[float, float]) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
    """``node`` (a MatMul on an int8 matrix) in QDQ form: its activations quantized to uint8 with the
    scale and zero point of their calibrated range, the matrix dequantized per channel."""
    x, w, y = node.input[0], node.input[1], node.output[0]
    low, high = min(calibrated[0], 0.0), max(calibrated[1], 0.0)
    step = (high - low) / 255 if high > low else 1.0
    zero = int(np.clip(np.rint(-low / step), 0, 255))
    constants = [helper.make_tensor(f"{y}#xs", TensorProto.FLOAT, [], [step]),
                 helper.make_tensor(f"{y}#xz", TensorProto.UINT8, [], [zero])]
    nodes = [helper.make_node("QuantizeLinear", [x, f"{y}#xs", f"{y}#xz"], [f"{y}#xq"]),
             helper.make_node("DequantizeLinear", [f"{y}#xq", f"{y}#xs", f"{y}#xz"], [f"{y}#x"]),
             helper.make_node("DequantizeLinear", [w, scale], [f"{y}#w"], axis=1),
             helper.make_node("MatMul", [f"{y}#x", f"{y}#w"], [y])]
    return nodes, constants


def _int4(edit: _Edit, name: str, key: str, array: np.ndarray, axis: int,
          store: WeightsStore) -> list[onnx.TensorProto]:
    """int4 in blocks along ``axis``: one DequantizeLinear whose output takes the initializer's name."""
    q, scale = quantize_int4(array, axis)
    qname, sname = f"{name}#int4", f"{name}#scale"
    edit.first.append(helper.make_node("DequantizeLinear", [qname, sname], [name], axis=axis,
                                       block_size=INT4_BLOCK))
    return [store.external(_tensor(qname, TensorProto.INT4, q.shape), f"{key}#int4", "uint8", pack_int4(q)),
            store.external(_tensor(sname, TensorProto.FLOAT, scale.shape), f"{key}#scale", "float32", scale)]
