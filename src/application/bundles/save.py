"""Saving a bundle: :func:`save_bundle` checks every function against the weights, then writes.

The directory's format is :mod:`jaxport.domain.bundle.manifest`'s; it is written
atomically by :func:`jaxport.adapters.storage.atomic_directory.write_bundle`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Collection, Mapping, Sequence
from functools import partial
from typing import Any

from jaxport.adapters.storage.atomic_files import write_all
from jaxport.adapters.storage.atomic_directory import Writer, sha256_later, write_bundle
from jaxport.adapters.jax.versions import this_producer
from jaxport.adapters.jax.bundles.weights import stored_weight
from jaxport.adapters.storage.safetensors_file import encode_header, raw_bytes, write_weights
from jaxport.domain.bundle.manifest import (
    EXAMPLES_FILE, EXAMPLES_FREE_VERSION, FORMAT_NAME, FORMAT_VERSION, WEIGHTS_FILE, FunctionEntry, Manifest
)
from jaxport.domain.checked_directory import FileDigest
from jaxport.domain.artifact.consumers import find_consumer
from jaxport.domain.bundle.names import check_weight_names, function_file
from jaxport.domain.errors import BundleError
from jaxport.adapters.jax.bundles.weights import (
    flatten_params, refuse_rng_streams, weight_shardings, weights_tree_spec
)
from jaxport.adapters.jax.bundles.examples import record_examples
from jaxport.adapters.jax.exported.exported import Exported
from jaxport.adapters.jax.trees.registry import default_registry
from jaxport.application import wiring
from jaxport.application.generation.bundle_files import generative_files
from jaxport.domain.generation.spec import GenerationSpec


def save_bundle(path: str | os.PathLike[str], functions: Mapping[str, Exported], params: Any, *,
                vjp_order: int = 0, metadata: Mapping[str, Any] | None = None,
                without_params: Collection[str] = (),
                examples: Mapping[str, Sequence[tuple[Sequence[Any], Mapping[str, Any]]]] | None = None,
                consumer: str | None = None, generation: GenerationSpec | None = None,
                overwrite: bool = False) -> None:
    """Saves a model: functions that share weights, and the weights, as a bundle directory.

    The directory holds ``manifest.json`` (format version, functions and their
    files, the weights' pytree with each leaf's key path, dtype and shape,
    ``metadata``, the size and SHA-256 of every other file), one artifact per
    function, ``NAME.jaxport`` (the bytes :func:`jaxport.save` writes; read by
    :func:`jaxport.load` and ``jax.export.deserialize``), and the weights in
    ``params.safetensors``, keyed by key path (``dense/w``; see
    :mod:`jaxport.domain.bundle.names`). With ``examples``, each function
    is called on each of its examples here, with JAX, and
    ``examples.safetensors`` keeps the inputs and the outputs
    (``predict/0/args/0``, ``predict/0/out``), which
    :func:`jaxport.check_numerics` runs again on another machine or runtime.

    Every check runs before anything is written. The directory is written
    atomically: a temporary directory beside ``path`` takes its place at the
    end, so a failed save leaves the previous bundle intact and no temporary
    behind.

    Args:
        path: the bundle directory (a previous bundle there is replaced).
        functions: names (letters, digits, ``_ . -``) -> exported functions,
            each exported with the weights' structure (arrays or
            ``jax.ShapeDtypeStruct``s) as its first positional argument.
        params: the weights: a pytree (dicts, lists, tuples, None,
            namedtuples and custom nodes registered for serialization; a
            Flax NNX state or an Equinox module's arrays, stored as the plain
            containers of :func:`jaxport.plain_tree`) of arrays of float, int
            or bool dtypes, or PRNG key arrays (not an NNX RNG stream's: see below).
        vjp_order: the orders of VJP to include in each artifact (1 allows
            ``jax.grad`` of the loaded functions, also with respect to the weights).
        metadata: JSON-serializable data stored in the manifest.
        without_params: names of functions that take no weights: they are
            stored as they are (``takes_params: false`` in the manifest) and
            the loaded bundle calls them without binding.
        examples: golden examples: function name -> a list of ``(args,
            kwargs)`` pairs of the caller's arguments (the weights are bound
            as when calling the loaded bundle), e.g. ``{"predict": [((x,), {})]}``.
        consumer: ``RUNTIME==VERSION`` (``"jax==0.9.2"``): each artifact holds what
            that release reads (see :meth:`Exported.serialize`).
        generation: which functions generate tokens and how (a generative
            bundle, see :class:`jaxport.GenerationSpec`); recorded in the
            manifest after it is checked against the functions, with the
            tokenizer it names copied in as ``tokenizer.json``.
        overwrite: replace whatever is at ``path`` (as :func:`jaxport.convert`'s
            ``overwrite``: a directory that is not a bundle, a file), in the same
            atomic step, after every check; without, only a previous bundle is.

    Raises:
        BundleMismatchError: a function's first argument differs from the
            weights (tree, shape, dtype) or two functions record different
            shardings for a weight; the message names the function and key path.
        BundleError: a bad function name, a weight that cannot be stored (an NNX
            RNG stream's key: the message names the filter that leaves it out),
            metadata that is not JSON, an example that its function refuses
            (the message names the function and the example).
        VjpUnavailableError: a function cannot provide VJPs of ``vjp_order``.
        FileExistsError: ``path`` exists and is not a bundle, and ``overwrite`` is False.
        UsageError: ``consumer`` is malformed or not in jaxport's table of consumers.
        ConsumerMismatchError: that consumer would not read or run a function.
        GenerationSpecError: ``generation`` does not fit the functions (the
            message names the function or the cache leaf).
    """
    if consumer is not None:
        find_consumer(consumer)  # a malformed or unknown consumer, before any other work
    registry = default_registry()
    refuse_rng_streams(params)
    treedef, names, leaves = flatten_params(params)
    check_weight_names(names)
    weights_tree = weights_tree_spec(registry, treedef)
    stored = [stored_weight(name, leaf) for name, leaf in zip(names, leaves)]
    data = [raw_bytes(host) for _, host in stored]
    # The weights' digests are computed on other threads while the functions are checked and
    # the files written; the manifest, written last, waits for them.
    weight_digests = sha256_later(data)
    weights = tuple(record for record, _ in stored)
    unknown = sorted(set(without_params) - set(functions))
    if unknown:
        raise BundleError(f"without_params names functions that are not in the bundle: {unknown}")
    for name, exp in functions.items():
        if not isinstance(exp, Exported):
            raise TypeError(f"The function '{name}' is a {type(exp).__name__}, not a jaxport.Exported")
    takes = {name: name not in without_params for name in functions}
    entries = tuple(FunctionEntry(name, function_file(name), takes[name]) for name in functions)
    weight_shardings(functions, takes, weights_tree, weights)
    meta = _checked_metadata(metadata)
    spec, extra_files = (None, {}) if generation is None else generative_files(
        generation, {name: exp.record for name, exp in functions.items()}, takes, wiring.generator_factory())
    recorded = record_examples(functions, takes, params, len(weights), examples)
    blobs = {entry.file: functions[entry.name].serialize(vjp_order, consumer=consumer) for entry in entries}

    header, order = encode_header(weights, {"format": FORMAT_NAME})

    def manifest(digests: dict[str, FileDigest]) -> bytes:
        version = FORMAT_VERSION if recorded.examples else EXAMPLES_FREE_VERSION
        hashed = tuple(dataclasses.replace(w, sha256=d) for w, d in zip(weights, weight_digests()))
        return Manifest(entries, weights_tree, hashed, meta, digests, version,
                        weights_header_sha256=hashlib.sha256(header).hexdigest(),
                        producer=this_producer(), examples=recorded.examples, generation=spec).to_json()

    files: dict[str, Writer] = {file: partial(write_all, data=blob) for file, blob in blobs.items()}
    files[WEIGHTS_FILE] = partial(write_weights, header=header, order=order, data=data)
    files.update((file, partial(write_all, data=blob)) for file, blob in extra_files.items())
    if recorded.write is not None:
        files[EXAMPLES_FILE] = recorded.write
    write_bundle(path, files, manifest, overwrite)


def _checked_metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    if metadata is None:
        return {}
    try:
        return dict(json.loads(json.dumps(dict(metadata), allow_nan=False)))
    except (TypeError, ValueError) as exc:
        raise BundleError(f"The bundle's metadata must be JSON-serializable with string keys: {exc}") from exc
