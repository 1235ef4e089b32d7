"""What a ``.tflite`` flatbuffer holds, read with LiteRT's schema (no interpreter, no TensorFlow).

Reads the operator codes (builtin names, and the custom code of ``CUSTOM``
operators, where Flex ops show), the signatures (their keys and the
input and output names, dtypes and shape signatures, ``-1`` for a dynamic
dimension) and the bytes of constant data (the weights each model holds).
Uses ``ai_edge_litert``'s generated schema (the ``ai-edge-litert`` package,
in both LiteRT extras) and the ``flatbuffers`` package it depends on.
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass

from .schema import schema


@dataclass(frozen=True, slots=True)
class TensorInfo:
    """One input or output of a signature: its wire name, dtype name and shape signature (-1: dynamic)."""

    name: str
    dtype: str
    shape_signature: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class SignatureInfo:
    """One signature of a model: its key, inputs and outputs in the signature's order."""

    key: str
    inputs: tuple[TensorInfo, ...]
    outputs: tuple[TensorInfo, ...]


@dataclass(frozen=True, slots=True)
class FlatbufferInfo:
    """A model's operators, signatures and constant bytes.

    Attributes:
        operators: per operator code, its builtin name and the custom code ('' for a builtin).
        signatures: the model's signatures.
        constant_bytes: the bytes of the model's buffers (its weights and other constants).
    """

    operators: tuple[tuple[str, str], ...]
    signatures: tuple[SignatureInfo, ...]
    constant_bytes: int


@functools.cache
def _names(kind: type) -> dict[int, str]:
    return {v: k for k, v in vars(kind).items() if not k.startswith("_") and isinstance(v, int)}


def read_flatbuffer(blob: bytes) -> FlatbufferInfo:
    """The operators, signatures and constant bytes of the model ``blob``.

    Raises:
        ValueError: ``blob`` is not a LiteRT model.
    """
    if len(blob) < 8 or blob[4:8] != b"TFL3":
        raise ValueError("not a LiteRT (.tflite) model: its file identifier is not TFL3")
    try:
        return _read(schema.Model.GetRootAs(blob, 0))
    except (struct.error, IndexError, KeyError, UnicodeDecodeError) as exc:
        raise ValueError(f"not a valid LiteRT (.tflite) model: {type(exc).__name__}: {exc}") from None


def _read(model: schema.Model) -> FlatbufferInfo:
    operators = []
    for i in range(model.OperatorCodesLength()):
        code = model.OperatorCodes(i)
        builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        custom = code.CustomCode()
        operators.append((_names(schema.BuiltinOperator).get(builtin, str(builtin)),
                          custom.decode() if custom else ""))
    signatures = []
    for i in range(model.SignatureDefsLength()):
        sig = model.SignatureDefs(i)
        graph = model.Subgraphs(sig.SubgraphIndex())
        ins = tuple(_tensor(graph, sig.Inputs(j)) for j in range(sig.InputsLength()))
        outs = tuple(_tensor(graph, sig.Outputs(j)) for j in range(sig.OutputsLength()))
        signatures.append(SignatureInfo(sig.SignatureKey().decode(), ins, outs))
    constant = 0
    for i in range(model.BuffersLength()):
        buffer = model.Buffers(i)
        constant += buffer.DataLength() or buffer.Size()
    return FlatbufferInfo(tuple(operators), tuple(signatures), constant)


def _tensor(graph: schema.SubGraph, entry: schema.TensorMap) -> TensorInfo:
    tensor = graph.Tensors(entry.TensorIndex())
    shape = tensor.ShapeSignatureAsNumpy() if tensor.ShapeSignatureLength() else tensor.ShapeAsNumpy()
    dims = () if isinstance(shape, int) else tuple(int(d) for d in shape)
    return TensorInfo(entry.Name().decode(), _names(schema.TensorType)[tensor.Type()].lower(), dims)
