"""Several ``.tflite`` models as one, each a signature of it, equal constants stored once.

A generative bundle's prefill and decode convert to one model each, and each
holds its own copy of the weights as constants; LiteRT-LM's convention is one
file whose ``prefill`` and ``decode`` signatures share one copy.
:func:`merge_models` makes that file from the models converted one by one:
every subgraph is kept (its signature renamed), the operator codes are
merged, and the constant buffers are stored once per content (the same weight
folded into two graphs is the same bytes: one buffer that both read). Each
buffer's data is aligned to 16 bytes (the schema's ``force_align``, which the
flatbuffers object API does not honour). Uses ``ai_edge_litert``'s flatbuffer
object API (the ``ai-edge-litert`` package of the extra).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from .schema import flatbuffer_utils, schema

#: The alignment of a buffer's data (``force_align: 16`` in LiteRT's schema).
_ALIGNMENT = 16


class _AlignedBuffer(schema.BufferT):  # type: ignore[misc]  # the generated schema is untyped
    """A buffer whose data the builder aligns to :data:`_ALIGNMENT` bytes."""

    def __init__(self, data: bytes) -> None:
        super().__init__()
        self.bytes = data

    def Pack(self, builder: Any) -> int:  # noqa: N802  # the generated API's name
        builder.StartVector(1, len(self.bytes), _ALIGNMENT)
        builder.head = builder.head - len(self.bytes)
        builder.Bytes[builder.head:builder.head + len(self.bytes)] = self.bytes
        data = builder.EndVector()
        schema.BufferStart(builder)
        schema.BufferAddData(builder, data)
        end: int = schema.BufferEnd(builder)
        return end


def merge_models(models: Sequence[tuple[str, bytes]]) -> bytes:
    """One model holding every ``(signature key, model)`` of ``models`` as a signature of that key.

    Each model has one signature (as :func:`~jaxport.adapters.litert.stablehlo_to_tflite.to_tflite`
    writes it); the first model's metadata and description are kept. A subgraph index in an
    operator's options (control flow, a composite's decomposition) is moved with its subgraphs.
    """
    merged = schema.ModelT()
    merged.operatorCodes, merged.buffers, merged.subgraphs, merged.signatureDefs = [], [schema.BufferT()], [], []
    stored: dict[bytes, int] = {}
    for at, (key, blob) in enumerate(models):
        tree: Any = flatbuffer_utils.read_model_from_bytearray(bytearray(blob))  # offset buffers read in
        buffers = [_store(merged, stored, b) for b in tree.buffers]
        codes = [_code(merged, c) for c in tree.operatorCodes]
        if at == 0:
            merged.version, merged.description = tree.version, tree.description
            merged.metadata = tree.metadata
            for entry in merged.metadata or []:
                entry.buffer = buffers[entry.buffer]
        base = len(merged.subgraphs)
        for subgraph in tree.subgraphs:
            for tensor in subgraph.tensors or []:
                tensor.buffer = buffers[tensor.buffer]
            for op in subgraph.operators or []:
                op.opcodeIndex = codes[op.opcodeIndex]
                _move_subgraph_indices(op, base)
            merged.subgraphs.append(subgraph)
        for signature in tree.signatureDefs:
            signature.signatureKey = key
            signature.subgraphIndex += base
            merged.subgraphs[signature.subgraphIndex].name = key
            merged.signatureDefs.append(signature)
    return bytes(flatbuffer_utils.convert_object_to_bytearray(merged))


def _store(merged: Any, stored: dict[bytes, int], buffer: Any) -> int:
    """The index in ``merged`` of a buffer holding ``buffer``'s data (0, the empty one, for none)."""
    data = b"" if buffer.data is None else np.asarray(buffer.data, np.uint8).tobytes()
    if not data:
        return 0
    digest = hashlib.sha256(data).digest()
    if digest not in stored:
        merged.buffers.append(_AlignedBuffer(data))
        stored[digest] = len(merged.buffers) - 1
    return stored[digest]


def _code(merged: Any, code: Any) -> int:
    """The index in ``merged`` of an operator code equal to ``code`` (added if none is)."""
    ident = (code.builtinCode, code.deprecatedBuiltinCode, code.customCode, code.version)
    for index, known in enumerate(merged.operatorCodes):
        if (known.builtinCode, known.deprecatedBuiltinCode, known.customCode, known.version) == ident:
            return index
    merged.operatorCodes.append(code)
    return len(merged.operatorCodes) - 1


def _move_subgraph_indices(op: Any, base: int) -> None:
    """Adds ``base`` to every subgraph index in ``op``'s options (``WhileOptions.bodySubgraphIndex``...)."""
    for options in (op.builtinOptions, getattr(op, "builtinOptions2", None)):
        for name, value in list(vars(options).items()) if options is not None else ():
            if name.lower().endswith("subgraphindex") and isinstance(value, int):
                setattr(options, name, value + base)
