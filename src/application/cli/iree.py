"""``jaxport run`` and ``jaxport inspect`` on a directory that ``jaxport convert --to iree`` wrote.

Neither imports JAX: the directory is read with the standard library, the
arrays with NumPy, and the functions run on IREE's runtime.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from .common import UsageError


def is_iree_directory(path: str) -> bool:
    """Whether ``path`` is a directory whose manifest names the IREE format."""
    from ...domain.iree_manifest import FORMAT_NAME, MANIFEST_FILE, manifest_format

    manifest = Path(path, MANIFEST_FILE)
    return os.path.isdir(path) and manifest.is_file() and manifest_format(manifest.read_bytes()) == FORMAT_NAME


def run_iree(args: argparse.Namespace) -> int:
    """``jaxport run DIR FUNCTION``: calls the function on arrays from files; writes or summarizes the results."""
    from ...adapters.array_files import read_arrays, write_arrays
    from ...domain.errors import TreeMismatchError
    from ...domain.runtime_calls import check_call, flatten_call
    from ..iree_load import load_iree
    from .common import array_summary, check_writable

    if args.output:
        check_writable(args.output)
    inputs = read_arrays(args.input)
    model = load_iree(args.path)
    name = args.function
    if name is None:
        if len(model) != 1:
            raise UsageError(f"{args.path} has functions {', '.join(model)}: name one")
        name = next(iter(model))
    if name not in model:
        raise UsageError(f"{args.path} has no function {name!r} (it has {', '.join(model)})")
    function = model[name]
    record = function.record
    try:
        leaves = flatten_call(record, inputs.args, inputs.kwargs)
    except TreeMismatchError:
        if inputs.kwargs or len(inputs.args) != len(record.in_avals):
            raise
        leaves = list(inputs.args)  # nested arguments, given as leaves in flattening order
    leaves = [_typed(leaf, aval.dtype.value) for leaf, aval in zip(leaves, record.in_avals)]
    results = function.runtime.run(record, leaves, check_call(record, leaves))
    if args.output:
        write_arrays(args.output, results)
        return 0
    for i, value in enumerate(results):
        print(f"result[{i}]: {array_summary(value)}")
    return 0


def _typed(leaf: Any, dtype: str) -> Any:
    """NumPy stores bfloat16 and float8 arrays as raw bytes (``|V2``, ``|V1``): view them as ``dtype``."""
    from ...adapters.safetensors_file import numpy_dtype

    if leaf.dtype.kind != "V":
        return leaf
    try:
        wanted = numpy_dtype(dtype)
    except TypeError:
        return leaf
    return leaf.view(wanted) if wanted.itemsize == leaf.dtype.itemsize else leaf


def inspect_iree(path: str, as_json: bool) -> str:
    """The text (or, with ``as_json``, the manifest's JSON on one line) that ``jaxport inspect`` prints.

    Raises:
        ArtifactError: the manifest is damaged.
    """
    from ...domain.iree_manifest import MANIFEST_FILE, IreeManifest, manifest_text

    data = Path(path, MANIFEST_FILE).read_bytes()
    manifest = IreeManifest.from_json(data)
    if as_json:
        return json.dumps({"file": path, **json.loads(data)})
    return manifest_text(manifest, path)
