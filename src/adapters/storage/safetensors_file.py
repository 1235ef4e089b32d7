"""The weights file of a bundle in the safetensors format: JAX arrays written, read back memory-mapped.

The format: an unsigned little-endian 64-bit header length, the header (JSON:
each tensor's name -> ``{"dtype": "F32", "shape": [...], "data_offsets":
[begin, end]}``, plus a ``"__metadata__"`` map of strings), then the raw
little-endian bytes of the tensors, back to back. This writer pads the
header with spaces so that the data starts 64 bytes into a page, and puts
the tensors whose size is a multiple of 64 bytes first: those arrays are
then aligned, and the CPU client of XLA uses them in place, without a copy.
The ``safetensors`` package reads these files (and this reader reads its).
A PRNG key array is stored as its key data and wrapped again when read.
"""

from __future__ import annotations

import json
import mmap
import os
import struct
from collections.abc import Mapping, Sequence
from typing import Any, BinaryIO, cast

import numpy as np

from jaxport.adapters.storage.atomic_files import write_all
from jaxport.domain.bundle.manifest import WEIGHTS_FILE, Example, WeightRecord
from jaxport.domain.bundle.checks import TensorEntry, check_weights_header
from jaxport.domain.errors import ArtifactError

ALIGNMENT = 64
#: The largest header this reader accepts (as the safetensors library does).
MAX_HEADER = 100 * 1024 * 1024


def numpy_dtype(name: str) -> np.dtype[Any]:
    """The NumPy dtype of a stored dtype name (``"bfloat16"`` through ml_dtypes)."""
    if name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        import ml_dtypes  # here: 3 ms a process whose weights are all NumPy's own dtypes never pays

        return cast(np.dtype[Any], np.dtype(getattr(ml_dtypes, name)))
    return np.dtype(name)


def raw_bytes(array: np.ndarray) -> memoryview:
    """The little-endian bytes of an array, as the file stores them (a view when possible)."""
    data = np.ascontiguousarray(array)
    if data.dtype.byteorder == ">":
        data = data.astype(data.dtype.newbyteorder("<"))
    return data.reshape(-1).view(np.uint8).data


def encode_header(weights: Sequence[WeightRecord], metadata: Mapping[str, str]) -> tuple[bytes, list[int]]:
    """The header (length prefix included) and the order in which the weights' bytes follow it."""
    order = sorted(range(len(weights)), key=lambda i: weights[i].nbytes % ALIGNMENT != 0)
    header: dict[str, Any] = {"__metadata__": dict(metadata)}
    offset = 0
    for i in order:
        w = weights[i]
        header[w.name] = {"dtype": w.safetensors_dtype, "shape": list(w.data_shape),
                          "data_offsets": [offset, offset + w.nbytes]}
        offset += w.nbytes
    # Keys as UTF-8, as the safetensors library writes them (IREE's reader takes no JSON escapes).
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * (-(8 + len(text)) % ALIGNMENT)
    return struct.pack("<Q", len(text)) + text, order


def write_weights(stream: BinaryIO, header: bytes, order: Sequence[int], data: Sequence[memoryview]) -> None:
    """Writes a header from :func:`encode_header`, then the weights' bytes (``data``, in weight order)."""
    stream.write(header)
    for i in order:
        write_all(stream, data[i])


class SafetensorsFile:
    """A weights file, memory-mapped read-only; arrays are views of the mapping.

    The mapping stays open as long as an array viewing it lives.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        """Maps ``path`` and parses its header.

        Raises:
            ArtifactError: naming ``params.safetensors`` when the header is
                truncated, too large or not the format's JSON.
            OSError: the file cannot be opened.
        """
        with open(path, "rb") as f:
            #: What the system says of the file mapped (:mod:`.checked_directory`).
            self.status = os.fstat(f.fileno())
            size = self.status.st_size
            self.buffer: mmap.mmap | bytes = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        self.size = size
        self.entries, self.metadata, self.data_start = decode_header(memoryview(self.buffer))

    @property
    def data_size(self) -> int:
        """The number of bytes after the header."""
        return self.size - self.data_start

    @property
    def header(self) -> memoryview:
        """The header's bytes, length prefix included."""
        return memoryview(self.buffer)[:self.data_start]

    def tensor_bytes(self, name: str) -> memoryview:
        """The stored bytes of tensor ``name`` (checked against the manifest already)."""
        entry = self.entries[name]
        return memoryview(self.buffer)[self.data_start + entry.begin:self.data_start + entry.end]

    def array(self, name: str, dtype: str) -> np.ndarray:
        """The tensor ``name`` (checked against the manifest already) as a read-only view."""
        return _view(self.buffer, self.data_start, self.entries[name], dtype)


def _view(buffer: Any, data_start: int, entry: TensorEntry, dtype: str) -> np.ndarray:
    """The tensor of ``entry`` (checked against the manifest already) in a file's bytes, as a view."""
    kind = numpy_dtype(dtype)
    flat = np.frombuffer(buffer, dtype=kind, count=(entry.end - entry.begin) // kind.itemsize,
                         offset=data_start + entry.begin)
    return flat.reshape(entry.shape)


def decode_header(data: memoryview, file: str = WEIGHTS_FILE) -> tuple[dict[str, TensorEntry], dict[str, str], int]:
    """The tensors, the metadata and the data offset of a safetensors file's bytes.

    Raises:
        ArtifactError: naming ``file``, when the header is truncated, too large or malformed.
    """
    if len(data) < 8:
        raise ArtifactError(f"{file} is truncated: {len(data)} bytes, shorter than its header")
    (length,) = struct.unpack("<Q", data[:8])
    if length > MAX_HEADER or 8 + length > len(data):
        raise ArtifactError(f"{file}: its header claims {length} bytes, more than the file "
                            f"({len(data)} bytes) or the limit holds")
    try:
        doc = json.loads(bytes(data[8:8 + length]).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ArtifactError(f"{file}: the header is not JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise ArtifactError(f"{file}: the header is not a JSON object")
    metadata = doc.pop("__metadata__", {})
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise ArtifactError(f"{file}: the header's __metadata__ is not a map of strings")
    entries = {name: _entry(name, value, file) for name, value in doc.items()}
    return entries, metadata, 8 + length


def _entry(name: str, value: Any, file: str) -> TensorEntry:
    try:
        dtype, shape, (begin, end) = value["dtype"], value["shape"], value["data_offsets"]
        if not (isinstance(dtype, str) and all(isinstance(x, int) for x in (*shape, begin, end))):
            raise TypeError("wrong types")
        return TensorEntry(dtype, tuple(shape), begin, end)
    except (KeyError, TypeError, ValueError) as exc:
        raise ArtifactError(f"{file}: the header entry of '{name}' is malformed: {value!r}") from exc


def read_examples(data: bytes, examples: Sequence[Example], *, file: str
                  ) -> list[tuple[list[np.ndarray], list[np.ndarray]]]:
    """Each golden example's input and output arrays, from the bytes of their safetensors file.

    The one reader of golden examples: the numerics check, the quantized
    conversion's check and its calibration read them here.

    Args:
        data: the examples file's bytes, their digest checked when they were read.
        examples: the manifest's records of the examples (every one the file holds);
            they come back in their order, each as (inputs, outputs), views of ``data``.
        file: the file's name in messages.

    Raises:
        ArtifactError: naming ``file``, when its header differs from ``examples``.
    """
    entries, _, start = decode_header(memoryview(data), file)
    check_weights_header([a for e in examples for a in e.arrays], entries, len(data) - start, file)

    def arrays(records: Sequence[WeightRecord]) -> list[np.ndarray]:
        return [_view(data, start, entries[r.name], r.data_dtype) for r in records]

    return [(arrays(e.inputs), arrays(e.outputs)) for e in examples]
