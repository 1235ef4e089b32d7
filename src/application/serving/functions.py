"""The functions of a directory, as a server needs them: wire interface, compiled sizes, checked flat calls.

:class:`~jaxport.domain.serving.protocol.ServedFunction` is the narrow interface between what jaxport loads
and the protocol server (:mod:`jaxport.adapters.kserve.server`): a name, the
interface on the wire, the sizes a target was compiled for, and two calls on
flat host arrays: ``check`` (jaxport's call front: ranks, dtypes, shapes,
dimension variables, constraints, raising :mod:`jaxport.errors`) and ``run``
(checks, then runs on the directory's runtime).

:func:`load_served` opens a bundle (run on JAX) or any directory that
jaxport converted (:func:`jaxport.load_converted`: IREE, a SavedModel, and
every target registered later, each on its own runtime, without JAX).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from jaxport.domain.errors import ArtifactError
from jaxport.domain.path_kind import PathKind, require
from jaxport.domain.calls.front import call_checker, leaf_paths, result_paths
from jaxport.domain.serving.protocol import ServedFunction, wire_interface
from jaxport.adapters.storage.bundle_dir import read_manifest
from jaxport.adapters.storage.path_kind import path_kind
from jaxport.application.conversion.api import load_converted
from jaxport.application.conversion.model import ConvertedModel, read_converted

if TYPE_CHECKING:
    from jaxport.application.bundles.api import Bundle


def load_served(path: str | os.PathLike[str], bundle: Bundle | None = None) -> list[ServedFunction]:
    """Every function of the directory at ``path``, loaded and ready to run (``bundle``: the bundle at
    ``path``, loaded already).

    Raises:
        ArtifactError: ``path`` is not a directory that jaxport wrote, or is damaged.
        ConversionError: a function has an input or output the protocol cannot carry.
        MissingExtraError: the directory's runtime is not installed.
        TargetMismatchError, PlatformMismatchError: the directory cannot run on this machine.
    """
    return served_functions(served_model(path, bundle))


def served_model(path: str | os.PathLike[str], bundle: Bundle | None = None) -> ConvertedModel:
    """The directory at ``path`` on its runtime: a bundle on JAX (``bundle``: loaded already), a converted
    directory on its target's, at the sizes it was compiled for.

    Raises:
        The errors of :func:`load_served`.
    """
    root = Path(path)
    if served_kind(root) is PathKind.BUNDLE:
        return _bundle(root, bundle)
    return load_converted(root)


def served_kind(path: str | os.PathLike[str]) -> PathKind:
    """What ``path`` is, a bundle or a converted directory: checked before a server binds its ports.

    Raises:
        ArtifactError: ``path`` is anything else (missing, a file, a directory that jaxport did not
            write); the message says what it is.
    """
    kind = path_kind(path)
    require(kind, path, PathKind.BUNDLE, PathKind.CONVERTED)
    if kind not in (PathKind.BUNDLE, PathKind.CONVERTED):
        raise ArtifactError(f"{os.fspath(path)} is {kind.value}: serve a bundle or a directory that jaxport "
                            "converted")
    return kind


def has_examples(path: str | os.PathLike[str]) -> bool:
    """Whether the bundle or converted directory at ``path`` carries golden examples (reads its manifest)."""
    root = Path(path)
    if path_kind(root) is PathKind.BUNDLE:
        return bool(read_manifest(root).examples)
    return bool(read_converted(root)[0].examples)


def _bundle(root: Path, bundle: Bundle | None) -> ConvertedModel:
    """A bundle on JAX, through the same call front as every converted target, its weights bound."""
    # JAX: serving a converted directory runs without it (tests/runtime_only).
    from jaxport.application.bundles.api import load_bundle
    from jaxport.application.conversion.jax_model import jax_model

    return jax_model(load_bundle(root) if bundle is None else bundle)


def served_functions(model: ConvertedModel) -> list[ServedFunction]:
    """The functions of ``model`` (the front's checked flat call), with the sizes of their variants."""
    served = []
    for name in model:
        signature = model[name].signature
        wire = wire_interface(name, signature, leaf_paths(signature.in_tree), result_paths(signature.out_tree))
        compiled = tuple(v.binding for v in model.functions[name].variants)
        served.append(ServedFunction(name, signature, wire, compiled, call_checker(signature).check,
                                     model[name].run_flat, model.target))
    return served
