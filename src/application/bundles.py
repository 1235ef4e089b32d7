"""Bundles: :func:`save_bundle`, :func:`load_bundle` and the :class:`Bundle` it gives back.

A bundle is several exported functions that share weights, saved as one
directory (its format: :mod:`jaxport.domain.bundle`). Saving checks every
function against the weights before anything is written; loading checks
every file before anything is made.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import types
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import jax
import numpy as np
from jax.core import ShapedArray
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from ..adapters.bundle_dir import read_function, read_manifest, sha256_many, write_bundle
from ..adapters.jax_avals import tree_differences
from ..adapters.jax_records import jax_sharding
from ..adapters.jax_versions import this_producer
from ..adapters.jax_weights import restore_weight, stored_weight
from ..adapters.safetensors_file import SafetensorsFile, encode_header, raw_bytes, write_weights
from ..domain.artifact import NamedShardingRecord, TreeKind, TreeSpec
from ..domain.bundle import (EXAMPLES_FILE, EXAMPLES_FREE_VERSION, FORMAT_NAME, FORMAT_VERSION, WEIGHTS_FILE,
                             FileDigest, FunctionEntry, Manifest, WeightRecord)
from ..domain.bundle_names import check_weight_names, function_file, weight_name
from ..domain.bundle_checks import (LeafSpec, agreed_shardings, check_header_digest, check_matches_weights,
                                    check_weight_digest, check_weights_header)
from ..domain.call_checks import check_shardings_divide
from ..domain.errors import ArtifactError, BundleError, BundleMismatchError, ShardingMismatchError, TreeMismatchError
from . import placement
from .exported import Exported
from .artifact_files import artifact_bytes
from .examples import record_examples
from .pytree_registry import PytreeSerializationRegistry
from .wiring import default_registry
from .serialization import deserialize


def save_bundle(path: str | os.PathLike[str], functions: Mapping[str, Exported], params: Any, *,
                vjp_order: int = 0, metadata: Mapping[str, Any] | None = None,
                without_params: Collection[str] = (),
                examples: Mapping[str, Sequence[tuple[Sequence[Any], Mapping[str, Any]]]] | None = None) -> None:
    """Saves a model: functions that share weights, and the weights, as a bundle directory.

    The directory holds ``manifest.json`` (format version, functions and their
    files, the weights' pytree with each leaf's key path, dtype and shape,
    ``metadata``, the size and SHA-256 of every other file), one artifact per
    function, ``NAME.jaxport`` (the bytes :func:`jaxport.save` writes; read by
    :func:`jaxport.load` and ``jax.export.deserialize``), and the weights in
    ``params.safetensors``, keyed by key path (``dense/w``; see
    :mod:`jaxport.domain.bundle_names`). With ``examples``, each function
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
            or bool dtypes, or PRNG key arrays.
        vjp_order: the orders of VJP to include in each artifact (1 allows
            ``jax.grad`` of the loaded functions, also with respect to the weights).
        metadata: JSON-serializable data stored in the manifest.
        without_params: names of functions that take no weights: they are
            stored as they are (``takes_params: false`` in the manifest) and
            the loaded bundle calls them without binding.
        examples: golden examples: function name -> a list of ``(args,
            kwargs)`` pairs of the caller's arguments (the weights are bound
            as when calling the loaded bundle), e.g. ``{"predict": [((x,), {})]}``.

    Raises:
        BundleMismatchError: a function's first argument differs from the
            weights (tree, shape, dtype) or two functions record different
            shardings for a weight; the message names the function and key path.
        BundleError: a bad function name, a weight that cannot be stored,
            metadata that is not JSON, an example that its function refuses
            (the message names the function and the example).
        VjpUnavailableError: a function cannot provide VJPs of ``vjp_order``.
        FileExistsError: ``path`` exists and is not a bundle.
    """
    registry = default_registry()
    treedef, names, leaves = flatten_params(params)
    check_weight_names(names)
    weights_tree = _tree_spec(registry, treedef)
    stored = [stored_weight(name, leaf) for name, leaf in zip(names, leaves)]
    data = [raw_bytes(host) for _, host in stored]
    weights = tuple(dataclasses.replace(record, sha256=digest)
                    for (record, _), digest in zip(stored, sha256_many(data)))
    unknown = sorted(set(without_params) - set(functions))
    if unknown:
        raise BundleError(f"without_params names functions that are not in the bundle: {unknown}")
    for name, exp in functions.items():
        if not isinstance(exp, Exported):
            raise TypeError(f"The function '{name}' is a {type(exp).__name__}, not a jaxport.Exported")
    takes = {name: name not in without_params for name in functions}
    entries = tuple(FunctionEntry(name, function_file(name), takes[name]) for name in functions)
    _weight_shardings(functions, takes, weights_tree, weights)
    meta = _checked_metadata(metadata)
    recorded = record_examples(functions, takes, params, len(weights), examples)
    blobs = {entry.file: artifact_bytes(functions[entry.name], vjp_order) for entry in entries}

    header, order = encode_header(weights, {"format": FORMAT_NAME})

    def manifest(digests: dict[str, FileDigest]) -> bytes:
        version = FORMAT_VERSION if recorded.examples else EXAMPLES_FREE_VERSION
        return Manifest(entries, weights_tree, weights, meta, digests, version,
                        weights_header_sha256=hashlib.sha256(header).hexdigest(),
                        producer=this_producer(), examples=recorded.examples).to_json()

    def write_params(stream: BinaryIO) -> None:
        write_weights(stream, header, order, data)

    files = {file: _writer(blob) for file, blob in blobs.items()}
    files[WEIGHTS_FILE] = write_params
    if recorded.write is not None:
        files[EXAMPLES_FILE] = recorded.write
    write_bundle(path, files, manifest)


def _writer(blob: bytes | bytearray) -> Any:
    return lambda stream: stream.write(blob)


def _checked_metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    if metadata is None:
        return {}
    try:
        return dict(json.loads(json.dumps(dict(metadata), allow_nan=False)))
    except (TypeError, ValueError) as exc:
        raise BundleError(f"The bundle's metadata must be JSON-serializable with string keys: {exc}") from exc


def load_bundle(path: str | os.PathLike[str], *, params: Any = None, mesh: Mesh | None = None,
                verify: bool = True, allowed_custom_calls: Iterable[str] = ()) -> Bundle:
    """Loads the bundle that :func:`jaxport.save_bundle` wrote at ``path``.

    Every file is checked before the :class:`Bundle` is made (its size and
    digest, the manifest's format version, the weights' header against the
    manifest, each function against the weights): a damaged bundle raises,
    it never loads in part. The weights file is read once, memory-mapped;
    on one CPU device the weights are used in place, without a copy.

    Args:
        path: the bundle directory.
        params: weights to use instead of the bundle's (checked like
            :meth:`Bundle.with_params`); the weights file is then not read.
        mesh: a mesh of the axes the functions were exported with: each
            weight is placed with its recorded sharding over it (replicated
            where none is recorded), in one process or across the processes
            of JAX's distributed runtime (each reads only its devices'
            slices). Without a mesh, weights with recorded shardings go to
            this process's first devices, the others to the default device.
        verify: verify each function's artifact as :func:`jaxport.load` does
            (its modules parsed in a separate process, ``main``'s signature and
            custom calls checked); verdicts are remembered per digest.
        allowed_custom_calls: custom-call targets to accept besides those JAX
            guarantees stable; the artifacts' own disabled checks do not count.

    Raises:
        ArtifactError: a file is missing, extra, truncated or changed, a
            weight's dtype or shape differs from the manifest, the manifest
            is of a newer format; the message names the file and the key.
        BundleMismatchError: ``params`` differ from the bundle's weights.
        MeshMismatchError: ``mesh``'s axes differ from the recorded ones.
        OSError: ``path`` is not a readable directory.
    """
    root = Path(path)
    manifest = read_manifest(root)
    registry = default_registry()
    functions: dict[str, Exported] = {}
    for entry in manifest.functions:
        blob = read_function(root, manifest, entry.file)
        try:
            functions[entry.name] = deserialize(blob, registry, verify=verify,
                                                allowed_custom_calls=allowed_custom_calls)
        except ArtifactError as exc:
            raise ArtifactError(f"{entry.file}: {exc}") from exc
    takes = {e.name: e.takes_params for e in manifest.functions}
    try:
        shardings = _weight_shardings(functions, takes, manifest.params_tree, manifest.weights)
    except (BundleMismatchError, ShardingMismatchError) as exc:
        raise ArtifactError(f"The bundle's functions do not match its manifest: {exc}") from exc
    where = _weight_placements(shardings, mesh)
    leaves = _read_weights(root, manifest, where) if params is None else _placed_leaves(manifest, params, where)
    tree = registry.to_treedef(manifest.params_tree, leaves)
    return Bundle(manifest, functions, tree.unflatten(leaves), where)


def _read_weights(root: Path, manifest: Manifest, where: tuple[Any, ...]) -> list[Any]:
    """The weights, memory-mapped, after checking the header and every weight's digest.

    The header's digest and each weight's (computed on several threads) cover
    every byte of the file, as the whole file's digest would, and name the
    weight that changed.
    """
    weights = SafetensorsFile(root / WEIGHTS_FILE)
    check_weights_header(manifest.weights, weights.entries, weights.data_size)
    check_header_digest(manifest.weights_header_sha256, hashlib.sha256(weights.header).hexdigest())
    digests = sha256_many([weights.tensor_bytes(w.name) for w in manifest.weights])
    for weight, digest in zip(manifest.weights, digests):
        check_weight_digest(weight, digest)
    return [restore_weight(w, weights.array(w.name, w.data_dtype), s)
            for w, s in zip(manifest.weights, where, strict=True)]


class BoundFunction:
    """A bundle's function with the bundle's weights bound as its first argument.

    Calling it calls ``exported.call(params, *args, **kwargs)`` (or, for a
    function that takes no weights, ``exported.call(*args, **kwargs)``):
    eagerly, under ``jax.jit``, ``jax.vmap``, ``jax.grad`` with respect to
    the other arguments, and with symbolic shapes.
    """

    def __init__(self, exported: Exported, params: Any, takes_params: bool) -> None:
        self.exported = exported
        self.params = params
        self.takes_params = takes_params
        self.__name__ = exported.fun_name

    @functools.cached_property
    def in_tree(self) -> jax.tree_util.PyTreeDef:
        """The pytree of ``(args, kwargs)`` that the caller gives (the weights left out)."""
        if not self.takes_params:
            return self.exported.in_tree
        args, kwargs = self.exported.in_tree.children()
        return jax.tree_util.treedef_tuple([jax.tree_util.treedef_tuple(args.children()[1:]), kwargs])

    @property
    def in_avals(self) -> tuple[ShapedArray, ...]:
        """The flat abstract values of the caller's arguments (the weights left out)."""
        avals = self.exported.in_avals
        return avals[len(avals) - self.in_tree.num_leaves:]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Calls the function with the weights bound.

        Raises:
            TreeMismatchError: the arguments' pytree differs from the caller's
                part of the exported one; the message counts and names the
                caller's arguments only. And what :meth:`Exported.call` raises.
        """
        if not self.takes_params:
            return self.exported.call(*args, **kwargs)
        try:
            return self.exported.call(self.params, *args, **kwargs)
        except TreeMismatchError:
            actual = jax.tree_util.tree_structure((args, kwargs))
            if actual == self.in_tree:
                raise  # the difference is not the caller's
            raise TreeMismatchError(self.exported.fun_name, tree_differences(actual, self.in_tree),
                                    weights_bound=True) from None

    def __repr__(self) -> str:
        return f"BoundFunction({self.exported!r}, takes_params={self.takes_params})"


class Bundle(Mapping[str, BoundFunction]):
    """A model loaded by :func:`jaxport.load_bundle`: a mapping of names to bound functions.

    ``bundle["predict"](x)`` calls ``predict`` with the bundle's weights;
    ``bundle.functions["predict"]`` is the :class:`Exported` that takes the
    weights explicitly (so ``jax.grad`` with respect to the weights works,
    when the bundle was saved with ``vjp_order >= 1``).

    Attributes:
        functions: names -> :class:`Exported` (read-only).
        params: the weights pytree, as JAX arrays.
        metadata: the metadata given at save (read-only).
        manifest: the bundle's manifest record.
    """

    def __init__(self, manifest: Manifest, functions: Mapping[str, Exported], params: Any,
                 placements: Sequence[Any]) -> None:
        self.manifest = manifest
        self.functions: Mapping[str, Exported] = types.MappingProxyType(dict(functions))
        self.params = params
        self.metadata: Mapping[str, Any] = types.MappingProxyType(dict(manifest.metadata))
        self._placements = tuple(placements)
        self._bound = {e.name: BoundFunction(self.functions[e.name], params, e.takes_params)
                       for e in manifest.functions}

    def __getitem__(self, name: str) -> BoundFunction:
        try:
            return self._bound[name]
        except KeyError:
            raise KeyError(f"The bundle has no function {name!r}; it has {sorted(self._bound)}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._bound)

    def __len__(self) -> int:
        return len(self._bound)

    def with_params(self, params: Any) -> Bundle:
        """The same functions with other weights, checked like at save and placed like these.

        Raises:
            BundleMismatchError: the new weights' tree, shapes or dtypes differ
                from the bundle's; the message names the key path.
        """
        placed = _placed_leaves(self.manifest, params, self._placements)
        tree = jax.tree_util.tree_structure(self.params)
        return Bundle(self.manifest, self.functions, jax.tree_util.tree_unflatten(tree, placed),
                      self._placements)

    def __repr__(self) -> str:
        size = self.manifest.total_weight_bytes
        return f"Bundle(functions={list(self._bound)}, weights={len(self.manifest.weights)} arrays, {size} bytes)"


def _tree_spec(registry: PytreeSerializationRegistry, treedef: jax.tree_util.PyTreeDef) -> TreeSpec:
    """The serializable structure of the weights.

    Raises:
        BundleError: the pytree holds a node type not registered for serialization, or a dict
            with a key that is not a string (the message names its key path).
    """
    try:
        return registry.to_spec(treedef, where="params")
    except (ValueError, TypeError) as exc:
        raise BundleError(f"The weights' pytree cannot be saved: {exc}") from exc


def _check_function(name: str, exp: Exported, weights_tree: TreeSpec, weights: Sequence[WeightRecord]
                    ) -> tuple[NamedShardingRecord | None, ...]:
    """Checks that ``exp`` takes the weights first; returns the shardings it records for them.

    Raises:
        BundleMismatchError: naming the function and the key path.
    """
    record = exp.record
    args = record.in_tree.children[0]
    if args.kind is not TreeKind.TUPLE or not args.children:
        raise BundleMismatchError(name, "", "the function takes no positional argument; export it "
                                  "with the weights as its first argument, or list it in without_params")
    first = args.children[0]
    count = first.num_leaves
    check_matches_weights(name, weights_tree, weights, first, [LeafSpec.of(a) for a in record.in_avals[:count]])
    return tuple(s if isinstance(s, NamedShardingRecord) else None for s in record.in_shardings[:count])


def _weight_shardings(functions: Mapping[str, Exported], takes_params: Mapping[str, bool],
                      weights_tree: TreeSpec, weights: Sequence[WeightRecord]
                      ) -> tuple[NamedShardingRecord | None, ...]:
    """The sharding recorded for each weight, after checking every function that takes the weights.

    Raises:
        BundleMismatchError: a function's first argument differs from the
            weights, or two functions record different shardings for a weight.
        ShardingMismatchError: a weight's shape does not split as its sharding says.
        ValueError, NonStringKeyError: an in-process function's pytrees hold
            what the artifact format cannot (see :meth:`Exported.serialize`).
    """
    per_function = {name: _check_function(name, exp, weights_tree, weights)
                    for name, exp in functions.items() if takes_params[name]}
    agreed = agreed_shardings(weights, per_function)
    check_shardings_divide([w.shape for w in weights], agreed, [w.name for w in weights])
    return agreed


def _weight_placements(shardings: Sequence[NamedShardingRecord | None], mesh: Mesh | None) -> tuple[Any, ...]:
    """Where each weight goes: its recorded sharding over ``mesh`` (replicated over ``mesh``
    where none is recorded), or, without a mesh, over this process's first devices (None: the
    default device).

    Raises:
        MeshMismatchError: ``mesh``'s axes differ from the recorded mesh's.
        DeviceCountError: without a mesh, this process has too few devices.
    """
    recorded = [jax_sharding(s) for s in shardings]
    if mesh is not None:
        return tuple(NamedSharding(mesh, PartitionSpec()) if s is None else placement.for_mesh([s], mesh)[0]
                     for s in recorded)
    if all(s is None for s in recorded):
        return (None,) * len(recorded)
    return placement.default_placements(recorded, "load_bundle")


def _placed_leaves(manifest: Manifest, params: Any, where: Sequence[Any]) -> list[Any]:
    """The leaves of new weights, checked against the bundle's weights, each as a JAX array on
    its placement (None: the default device).

    Raises:
        BundleMismatchError: naming the key path where they differ.
    """
    treedef, _, leaves = flatten_params(params)
    check_matches_weights(None, manifest.params_tree, manifest.weights, _tree_spec(default_registry(), treedef),
                          [_leaf_spec(x) for x in leaves])
    return [x if isinstance(x, jax.Array) and (s is None or x.sharding == s) else jax.device_put(x, s)
            for x, s in zip(leaves, where, strict=True)]


def _entry_text(entry: Any) -> str:
    """One of JAX's key-path entries as text: a dict key, an index, a field name."""
    for attr in ("key", "idx", "name"):
        if hasattr(entry, attr):
            return str(getattr(entry, attr))
    return str(entry)


def flatten_params(params: Any) -> tuple[jax.tree_util.PyTreeDef, tuple[str, ...], list[Any]]:
    """The structure of ``params``, each leaf's key-path name and the leaves, in flattening order."""
    with_paths, treedef = jax.tree_util.tree_flatten_with_path(params)
    names = tuple(weight_name([_entry_text(e) for e in path]) for path, _ in with_paths)
    return treedef, names, [leaf for _, leaf in with_paths]


def _leaf_spec(leaf: Any) -> LeafSpec:
    """The shape and dtype of an array, a ``ShapeDtypeStruct`` or an abstract value."""
    dims = leaf.shape if hasattr(leaf, "shape") else np.shape(leaf)
    dtype = leaf.dtype if hasattr(leaf, "dtype") else np.asarray(leaf).dtype
    return LeafSpec(tuple(d if isinstance(d, int) else str(d) for d in dims), str(dtype))
