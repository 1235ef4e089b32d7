"""``jaxport run`` on a converted directory: one function called on arrays from files, without JAX.

The function is a :class:`~jaxport.application.converted_model.ConvertedCall`
of a runtime beyond JAX (a SavedModel's, an IREE directory's): the call is
checked by jaxport's domain code before the runtime sees it.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Mapping
from typing import Any

from .common import UsageError, check_writable, print_results

#: The dtypes NumPy stores as raw bytes (``|V2``, ``|V1``) in .npy files.
_RAW = ("bfloat16", "float8_e4m3fn", "float8_e5m2")


def pick(functions: Mapping[str, Any], name: str | None, what: str) -> Any:
    """The function ``name`` of ``functions`` (the only one when ``name`` is None).

    Raises:
        UsageError: there is no such function, or several and none is named.
    """
    if name is None:
        if len(functions) != 1:
            raise UsageError(f"{what} has functions {', '.join(functions)}: name one")
        name = next(iter(functions))
    if name not in functions:
        raise UsageError(f"{what} has no function {name!r} (it has {', '.join(sorted(functions))})")
    return functions[name]


def call_converted(args: argparse.Namespace, function: Any) -> int:
    """Calls ``function`` on the arrays of ``args.input``; writes them to ``args.output`` or prints them.

    The inputs are the caller's arguments (``arr_0``, ``arr_1``, ... and keyword
    arrays by name), or every leaf in flattening order (nested arguments, as
    for JAX); raw-bytes arrays are viewed as the dtype the function expects.
    """
    from ...adapters.array_files import read_arrays, write_arrays
    from ...adapters.safetensors_file import numpy_dtype

    if args.output:
        check_writable(args.output)
    inputs = read_arrays(args.input)
    record = function.record
    call_args: list[Any] = list(inputs.args)
    if not inputs.kwargs and len(call_args) == len(record.in_avals):
        leaves = [_typed(leaf, numpy_dtype(aval.dtype.value) if aval.dtype.value in _RAW else None)
                  for leaf, aval in zip(call_args, record.in_avals)]
        results = function.call_flat(leaves)
    else:
        results = function(*call_args, **inputs.kwargs)
    leaves_with_paths = list(_with_paths(results, ""))
    if args.output:
        write_arrays(args.output, [leaf for _, leaf in leaves_with_paths])
        return 0
    print_results(leaves_with_paths)
    return 0


def _typed(leaf: Any, dtype: Any) -> Any:
    """A raw-bytes array viewed as ``dtype`` (when the sizes agree)."""
    if dtype is not None and leaf.dtype.kind == "V" and leaf.dtype.itemsize == dtype.itemsize:
        return leaf.view(dtype)
    return leaf


def _with_paths(tree: Any, path: str) -> Iterator[tuple[str, Any]]:
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
