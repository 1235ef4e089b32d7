"""The functions of a directory, as a server needs them: wire signature, compiled sizes, checked flat calls.

:class:`~jaxport.domain.serving.ServedFunction` is the narrow interface between what jaxport loads
and the protocol server (:mod:`jaxport.adapters.kserve_server`): a name, the
signature on the wire, the sizes a target was compiled for, and two calls on
flat host arrays: ``check`` (jaxport's call front: ranks, dtypes, shapes,
dimension variables, constraints, raising :mod:`jaxport.errors`) and ``run``
(checks, then runs on the directory's runtime).

:func:`load_served` opens a bundle (run on JAX), a directory of IREE
modules (run on IREE, no JAX) or a SavedModel that jaxport wrote (run on
TensorFlow). When the converted-directory format lands, its loader replaces
the three branches; the rest of the server is unchanged.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..domain.artifact import ArtifactRecord
from ..domain.bundle import FORMAT_NAME as BUNDLE_FORMAT, MANIFEST_FILE
from ..domain.errors import ArtifactError
from ..domain.iree_manifest import FORMAT_NAME as IREE_FORMAT, manifest_format
from ..domain.runtime_calls import call_signature, leaf_paths, result_paths, with_weights_bound
from ..domain.serving import FlatCall, ServedFunction, served_signature

def _served(name: str, record: ArtifactRecord, run: FlatCall, runtime: str,
            compiled: Sequence[dict[str, int]] = ()) -> ServedFunction:
    signature = served_signature(name, record, leaf_paths(record.in_tree), result_paths(record.out_tree))
    return ServedFunction(name, record, signature, tuple(compiled), call_signature(record).check, run, runtime)


def load_served(path: str | os.PathLike[str]) -> list[ServedFunction]:
    """Every function of the directory at ``path``, loaded and ready to run.

    Raises:
        ArtifactError: ``path`` is not a directory that jaxport wrote, or is damaged.
        ConversionError: a function has an input or output the protocol cannot carry.
        MissingExtraError: the directory's runtime is not installed.
        TargetMismatchError: IREE modules compiled for another machine.
    """
    root = Path(path)
    if not root.is_dir():
        raise ArtifactError(f"{root} is not a directory (serve a bundle or a directory converted from one)")
    kind = _kind(root)
    if kind == BUNDLE_FORMAT:
        return _bundle(root)
    if kind == IREE_FORMAT:
        return _iree(root)
    from .savedmodel_load import is_savedmodel

    if is_savedmodel(root):
        return _savedmodel(root)
    raise ArtifactError(f"{root} is not a bundle or a directory converted from one by jaxport: it has "
                        "none of their manifests")


def _kind(root: Path) -> str | None:
    try:
        return manifest_format((root / MANIFEST_FILE).read_bytes())
    except OSError:
        return None


def _bundle(root: Path) -> list[ServedFunction]:
    """A bundle on JAX: each function through the runtime port, its weights bound first."""
    import jax

    from ..adapters.jax_runtime import JaxRuntime
    from .bundles import load_bundle

    bundle = load_bundle(root)
    weights = jax.tree.leaves(bundle.params)
    exported = {id(exp.record): exp for exp in bundle.functions.values()}
    runtime = JaxRuntime(lambda record: exported[id(record)])  # the bundle's own, made already
    served = []
    for entry in bundle.manifest.functions:
        record = bundle.functions[entry.name].record
        caller = with_weights_bound(record, len(weights)) if entry.takes_params else record
        first = list(weights) if entry.takes_params else []
        served.append(_served(entry.name, caller, _bundle_call(runtime, record, caller, first), runtime.name))
    return served


def _bundle_call(runtime: Any, record: ArtifactRecord, caller: ArtifactRecord, first: list[Any]) -> FlatCall:
    check = call_signature(caller).check

    def run(leaves: list[Any]) -> list[Any]:
        dims = check(leaves)
        return list(runtime.run(record, [*first, *leaves], dims))

    return run


def _iree(root: Path) -> list[ServedFunction]:
    """A directory of IREE modules: each function on IREE, at the sizes it was compiled for."""
    from .iree_load import load_iree

    model = load_iree(root)
    return [_served(name, model[name].record, model[name].run_flat, "iree",
                    [dict(m.dims) for m in model.functions[name].modules])
            for name in model]


def _savedmodel(root: Path) -> list[ServedFunction]:
    """A SavedModel that jaxport wrote: each signature on TensorFlow."""
    from .savedmodel_load import load_savedmodel

    return [_served(name, function.record, function.run_flat, "tf")
            for name, function in load_savedmodel(root).items()]
