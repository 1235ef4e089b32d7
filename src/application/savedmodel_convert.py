"""``to_savedmodel``: an artifact or a bundle as a TensorFlow SavedModel for TensorFlow Serving.

A source given as a path (an artifact file or a bundle directory, written by
jaxport or ``jax.export``) is read with jaxport's own readers: the converting
process never imports JAX. Every refusal runs before anything is written;
the directory is written beside ``path`` and renamed into place, so a failed
or interrupted conversion leaves nothing at ``path``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..adapters.bundle_dir import read_function, read_manifest, read_weights
from ..adapters.atomic_files import fsync_directory
from ..adapters.flatbuffers_codec import decode_artifact
from ..adapters.mlir_dimension_args import standard_record
from ..adapters.temporary import create_beside, new_directory
from ..domain.artifact import ArtifactRecord
from ..domain.bundle import EXAMPLES_FILE, Example, FileDigest, Manifest
from ..domain.errors import ArtifactError, VjpUnavailableError
from ..domain.savedmodel_manifest import EXAMPLES_PATH, JAXPORT_DIR, MANIFEST_PATH, SavedModelManifest, artifact_file
from ..domain.savedmodel_names import DEFAULT_SIGNATURE
from ..domain.savedmodel_plan import plan_savedmodel

#: (name, artifact bytes, takes the weights) per function.
_Functions = list[tuple[str, bytes, bool]]


def to_savedmodel(source: Any, path: str | os.PathLike[str], *, default: str | None = None,
                  allowed_custom_calls: Iterable[str] = ()) -> SavedModelManifest:
    """Writes ``source`` as a TensorFlow SavedModel directory at ``path``.

    One signature per function, named after it, with the caller's arguments
    as inputs (``arg0``, ``arg1/dense/w``, keywords by name; see
    :mod:`jaxport.domain.savedmodel_names`); ``serving_default`` calls the
    function ``default`` names, or the only one (a single artifact gives
    ``serving_default`` only). A bundle's weights become one ``tf.Variable``
    each; a bundle directory's golden examples go along, for
    :func:`jaxport.check_numerics` (an in-process :class:`~jaxport.Bundle`
    carries none: its weights may not be those the examples were made
    with). Where the artifacts carry VJPs, ``tf.GradientTape`` over the
    loaded object's functions (``tf.saved_model.load(path).predict(x)``)
    gives JAX's gradients. ``assets.extra/jaxport/`` keeps the artifacts and a manifest,
    which ``jaxport inspect`` and ``jaxport run`` read.

    Args:
        source: an :class:`~jaxport.Exported`, a :class:`~jaxport.Bundle`, or
            the path of an artifact file or a bundle directory.
        path: the SavedModel directory to create (it must not exist; missing
            parent directories are made).
        default: the function that ``serving_default`` calls.
        allowed_custom_calls: custom-call targets to carry although
            TensorFlow's XLA has no handler for them (when the serving
            TensorFlow registers them); ``"ALL"`` allows any.

    Returns:
        The manifest written (functions, weights, files and their sizes).

    Raises:
        ConversionError: a function cannot run in TensorFlow as exported
            (the message names the function, the argument and the reason).
        ArtifactError: the source is not a valid artifact or bundle.
        MissingExtraError: TensorFlow is not installed (``jaxport[tf]``).
        FileExistsError: ``path`` exists.
    """
    from ..adapters import tf_runtime

    target = Path(path)
    if os.path.lexists(target):
        raise FileExistsError(f"{target} exists; a SavedModel is written to a new directory "
                              "(TensorFlow Serving reads one per version: model/1, model/2, ...)")
    functions, manifest, weights = _read_source(source)
    # One form of `main`, written for a StableHLO that TensorFlow reads (adapters/mlir_dimension_args.py).
    reads = tf_runtime.reads_stablehlo()
    records = {name: standard_record(_decode(source, name, blob), newest_readable=reads)
               for name, blob, _ in functions}
    examples: tuple[Example, ...] = ()
    examples_blob = b""
    if manifest is not None and manifest.examples and isinstance(source, (str, os.PathLike)):
        examples, examples_blob = manifest.examples, read_function(Path(source), manifest, EXAMPLES_FILE)
    plan = plan_savedmodel([(name, records[name], takes) for name, _, takes in functions], manifest,
                           default=default, allowed_custom_calls=allowed_custom_calls,
                           versions=tf_runtime.calling_convention_versions())
    for fn in plan.functions:
        for call in (fn.call, fn.vjp):
            if call is not None:
                tf_runtime.check_readable(fn.name, call)
    target.parent.mkdir(parents=True, exist_ok=True)
    _, tmp_name = create_beside(target, ".tmp", new_directory)
    tmp = Path(tmp_name)
    try:
        tf_runtime.write_savedmodel(plan, weights(), tmp_name)
        (tmp / JAXPORT_DIR).mkdir(parents=True)
        for name, blob, _ in functions:
            (tmp / artifact_file(name)).write_bytes(blob)
        if examples:
            (tmp / EXAMPLES_PATH).write_bytes(examples_blob)
        written = SavedModelManifest.of(plan, _digests(tmp), examples)
        (tmp / MANIFEST_PATH).write_bytes(written.to_json())
        fsync_directory(tmp)
        os.rename(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    fsync_directory(target.parent)
    return written


def _decode(source: Any, name: str, blob: bytes) -> ArtifactRecord:
    try:
        return decode_artifact(blob)
    except ArtifactError as exc:
        where = os.fspath(source) if isinstance(source, (str, os.PathLike)) else "the source"
        raise ArtifactError(f"{where}: function '{name}': {exc}") from exc


def _digests(root: Path) -> dict[str, FileDigest]:
    digests = {}
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        with open(file, "rb") as f:
            digest = hashlib.file_digest(f, "sha256").hexdigest()
        digests[file.relative_to(root).as_posix()] = FileDigest(file.stat().st_size, digest)
    return digests


def _read_source(source: Any) -> tuple[_Functions, Manifest | None, Any]:
    """The functions, the bundle's manifest (None for one artifact) and a reader of the weights."""
    if isinstance(source, (str, os.PathLike)):
        if os.path.isdir(source):
            return _read_bundle_dir(Path(source))
        with open(source, "rb") as file:
            blob = file.read()
        return [(DEFAULT_SIGNATURE, blob, False)], None, list
    return _read_objects(source)


def _read_bundle_dir(root: Path) -> tuple[_Functions, Manifest, Any]:
    manifest = read_manifest(root)
    functions = [(e.name, read_function(root, manifest, e.file), e.takes_params) for e in manifest.functions]

    def weights() -> list[Any]:
        stored = read_weights(root, manifest.weights, manifest.weights_header_sha256)
        return [stored.array(w.name, w.data_dtype) for w in manifest.weights]

    return functions, manifest, weights


def _read_objects(source: Any) -> tuple[_Functions, Manifest | None, Any]:
    """An in-process ``Exported`` or ``Bundle`` (JAX is loaded already)."""
    from .bundles import Bundle, flatten_params
    from .exported import Exported

    if isinstance(source, Exported):
        return [(DEFAULT_SIGNATURE, _artifact_bytes(source), False)], None, list
    if isinstance(source, Bundle):
        from ..adapters.jax_weights import stored_weight

        functions = [(e.name, _artifact_bytes(source.functions[e.name]), e.takes_params)
                     for e in source.manifest.functions]

        def weights() -> list[Any]:
            _, names, leaves = flatten_params(source.params)
            return [stored_weight(name, leaf)[1] for name, leaf in zip(names, leaves)]

        return functions, source.manifest, weights
    raise TypeError(f"to_savedmodel takes an Exported, a Bundle, or the path of an artifact file or a "
                    f"bundle directory, not a {type(source).__name__}")


def _artifact_bytes(exp: Any) -> bytes:
    """The sealed artifact of an in-process function, with its first-order VJP when it has one."""
    try:
        return bytes(exp.serialize(1 if exp.has_vjp() else 0))
    except VjpUnavailableError:
        return bytes(exp.serialize(0))

