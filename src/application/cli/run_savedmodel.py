"""``jaxport run DIR FUNCTION`` on a SavedModel that jaxport wrote: through TensorFlow, without JAX.

The call is checked by jaxport's domain code against the function's record
(from the SavedModel's jaxport manifest) before TensorFlow loads the model.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..savedmodel_load import load_savedmodel
from .common import UsageError


def call_savedmodel(args: argparse.Namespace) -> list[tuple[str, Any]]:
    """Calls the SavedModel's function on the input files; returns the results' leaves and key paths."""
    from ...adapters.array_files import read_arrays
    from ...adapters.safetensors_file import numpy_dtype

    inputs = read_arrays(args.input)
    functions = load_savedmodel(args.path)
    name = args.function
    if name is None:
        names = [n for n in functions if n != "serving_default"]
        if len(names) != 1:
            raise UsageError(f"the SavedModel {args.path} has functions {', '.join(names)}: name one")
        name = names[0]
    if name not in functions:
        raise UsageError(f"the SavedModel {args.path} has no function {name!r} (it has "
                         f"{', '.join(sorted(functions))})")
    function = functions[name]
    record = function.record
    call_args: list[Any] = list(inputs.args)
    if not inputs.kwargs and len(call_args) == len(record.in_avals):
        # Every leaf given as arr_0, arr_1, ... in flattening order (nested arguments, as for JAX).
        leaves = [_typed(leaf, numpy_dtype(aval.dtype.value) if aval.dtype.value in _RAW else None)
                  for leaf, aval in zip(call_args, record.in_avals)]
        results = function.call_flat(leaves)
    else:
        results = function(*call_args, **inputs.kwargs)
    return list(_with_paths(results, ""))


#: The dtypes NumPy stores as raw bytes (``|V2``, ``|V1``) in .npy files.
_RAW = ("bfloat16", "float8_e4m3fn", "float8_e5m2")


def _typed(leaf: Any, dtype: Any) -> Any:
    """A raw-bytes array viewed as ``dtype`` (when the sizes agree)."""
    if dtype is not None and leaf.dtype.kind == "V" and leaf.dtype.itemsize == dtype.itemsize:
        return leaf.view(dtype)
    return leaf


def _with_paths(tree: Any, path: str) -> Any:
    """The leaves of a result pytree of plain containers with JAX's key paths (``['y']``, ``[0]``)."""
    if tree is None:
        return
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from _with_paths(value, f"{path}[{key!r}]")
    elif isinstance(tree, (tuple, list)):
        for i, value in enumerate(tree):
            yield from _with_paths(value, f"{path}[{i}]")
    else:
        yield path, tree
