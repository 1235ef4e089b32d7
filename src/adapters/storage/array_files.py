"""Arrays in NumPy files (``.npy``, ``.npz``): the inputs and outputs of ``jaxport run``.

An ``.npz`` file holds positional arrays as ``arr_0``, ``arr_1``, ... (the
names ``numpy.savez`` gives to positional arguments) and keyword arrays under
their own names; an ``.npy`` file holds one positional array. Files are read
without pickles, so a file cannot run code.
"""

from __future__ import annotations

import io
import math
import os
import re
import zipfile
from typing import Any
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from jaxport.domain.bundle.manifest import SAFETENSORS_DTYPES
from jaxport.domain.errors import ArrayFileError, JaxportError
from .atomic_files import write_atomically
from .safetensors_file import SafetensorsFile

_POSITIONAL = re.compile(r"arr_(\d+)")


@dataclass(slots=True)
class ArrayInputs:
    """The positional and keyword arrays read from one or more files."""

    args: list[np.ndarray] = field(default_factory=list)
    kwargs: dict[str, np.ndarray] = field(default_factory=dict)


def read_arrays(paths: Sequence[str | os.PathLike[str]]) -> ArrayInputs:
    """The arrays of ``paths``, in order: each ``.npy`` is the next positional
    array, each ``.npz`` adds its ``arr_i`` in order, then its named arrays.

    Raises:
        ArrayFileError: a file cannot be read, is not a NumPy file, holds
            pickled objects, skips an ``arr_i``, or repeats a keyword.
        OSError: a file does not exist.
    """
    inputs = ArrayInputs()
    for path in paths:
        name = str(path)
        if not Path(path).is_file():
            raise FileNotFoundError(f"no such input file: {name}")
        try:
            loaded = np.load(path, allow_pickle=False)
        except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
            raise ArrayFileError(f"{name} is not a readable .npy or .npz file: {exc}") from exc
        if isinstance(loaded, np.ndarray):
            inputs.args.append(loaded)
            continue
        with loaded:
            _add_npz(name, {key: _read_member(name, loaded, key) for key in loaded.files}, inputs)
    return inputs


def _read_member(name: str, loaded: np.lib.npyio.NpzFile, key: str) -> np.ndarray:
    try:
        return np.asarray(loaded[key])
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise ArrayFileError(f"{name}: array {key!r} cannot be read: {exc}") from exc


def _add_npz(name: str, arrays: dict[str, np.ndarray], inputs: ArrayInputs) -> None:
    positional = sorted((int(m[1]), key) for key in arrays if (m := _POSITIONAL.fullmatch(key)))
    for expected, (index, key) in enumerate(positional):
        if index != expected:
            raise ArrayFileError(f"{name}: positional arrays must be arr_0, arr_1, ... without gaps; "
                                 f"found {key} but no arr_{expected}")
        inputs.args.append(arrays[key])
    for key, value in arrays.items():
        if _POSITIONAL.fullmatch(key):
            continue
        if key in inputs.kwargs:
            raise ArrayFileError(f"{name}: keyword array {key!r} is given twice")
        inputs.kwargs[key] = value


def read_named_arrays(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """The named arrays of a weights file: ``.safetensors`` (read without the
    ``safetensors`` package) or ``.npz``, by the names stored in it.

    Raises:
        ArrayFileError: the file is not of either format, or a tensor's bytes
            do not match its dtype and shape.
        OSError: the file does not exist.
    """
    name = str(path)
    if not Path(path).is_file():
        raise FileNotFoundError(f"no such weights file: {name}")
    if name.endswith(".safetensors"):
        return _read_safetensors(path)
    inputs = read_arrays([path])
    if inputs.args:
        raise ArrayFileError(f"{name}: weights need names; found positional arrays (arr_0, ...)")
    return inputs.kwargs


def _read_safetensors(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    by_code = {code: (dtype, size) for dtype, (code, size) in SAFETENSORS_DTYPES.items()}
    try:
        stored = SafetensorsFile(path)
    except JaxportError as exc:
        raise ArrayFileError(f"{path} is not a readable safetensors file: {exc}") from exc
    arrays = {}
    for key, entry in stored.entries.items():
        if entry.dtype not in by_code:
            raise ArrayFileError(f"{path}: tensor {key!r} has dtype {entry.dtype}, which jaxport does not read")
        dtype, size = by_code[entry.dtype]
        count = math.prod(entry.shape)
        if not 0 <= entry.begin <= entry.end <= stored.data_size or entry.end - entry.begin != count * size:
            raise ArrayFileError(f"{path}: tensor {key!r} has {entry.end - entry.begin} bytes, "
                                 f"not the {count * size} that {entry.dtype}{list(entry.shape)} needs")
        arrays[key] = stored.array(key, dtype)
    return arrays


def write_arrays(path: str | os.PathLike[str], arrays: Sequence[np.ndarray]) -> None:
    """Writes ``arrays`` to an ``.npz`` file as ``arr_0``, ``arr_1``, ... atomically."""
    buffer = io.BytesIO()
    np.savez(buffer, *arrays)
    write_atomically(path, buffer.getvalue())


def array_summary(value: Any) -> str:
    """An array in a few words: ``float32[2,3] min -1 max 2 mean 0.5``, or its values when few."""
    kind = f"{value.dtype}[{','.join(map(str, value.shape))}]"
    if value.size == 0:
        return f"{kind} (empty)"
    if value.size <= 6:
        return f"{kind} {np.array2string(value.ravel(), precision=4, separator=', ')}"
    if value.dtype.kind in "biuf" or str(value.dtype) == "bfloat16":
        as_float = value.astype(np.float64)
        return (f"{kind} min {as_float.min():.4g} max {as_float.max():.4g} "
                f"mean {as_float.mean():.4g}")
    return kind
