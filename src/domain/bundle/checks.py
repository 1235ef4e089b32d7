"""The checks of a bundle: at save (functions against weights) and at load (files against manifest).

Save side: every function that takes the weights must take them, as its
first positional argument, with the weights' pytree structure, and each leaf
with the weight's shape and dtype; functions that record shardings for a
weight must agree on it. A difference raises ``BundleMismatchError`` naming
the function and the key path. ``with_params`` runs the same check on new
weights.

Load side: the directory holds exactly the manifest's files, each of the
recorded size and digest (:mod:`jaxport.domain.checked_directory`), and the weights file's header lists exactly the
manifest's weights, each with the recorded dtype and shape and inside the
file. A difference raises ``ArtifactError`` naming the file and the key.

Nothing here reads files or knows JAX; the callers pass what they found.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from jaxport.domain.artifact.record import AvalRecord, TreeKind, TreeSpec
from jaxport.domain.artifact.sharding import NamedShardingRecord
from jaxport.domain.checked_directory import check_listing
from jaxport.domain.symbolic import format_shape
from .manifest import EXAMPLES_FILE, MANIFEST_FILE, WEIGHTS_FILE, Manifest, WeightRecord
from jaxport.domain.leaf_names import weight_name
from jaxport.domain.errors import ArtifactError, BundleMismatchError


@dataclass(frozen=True, slots=True)
class LeafSpec:
    """The abstract value of one leaf: a shape (symbolic dimensions as text) and a dtype name."""

    shape: tuple[int | str, ...]
    dtype: str

    @staticmethod
    def of(aval: AvalRecord) -> LeafSpec:
        """The spec of an artifact's aval (constant dimensions as ints).

        >>> from jaxport.domain.artifact.record import DType
        >>> LeafSpec.of(AvalRecord(("b", "4"), DType.FLOAT32))
        LeafSpec(shape=('b', 4), dtype='float32')
        """
        return LeafSpec(tuple(int(d) if d.isdigit() else d for d in aval.shape), aval.dtype.value)


def tree_difference(expected: TreeSpec, got: TreeSpec, path: tuple[str, ...] = ()) -> tuple[str, str] | None:
    """The first place where two pytree structures differ: (key path, what differs), or None.

    >>> a = TreeSpec.of_dict({"w": TreeSpec.leaf(), "b": TreeSpec.leaf()})
    >>> tree_difference(a, TreeSpec.of_dict({"w": TreeSpec.leaf()}))
    ('', "dict keys ['w'] where the weights have ['b', 'w']")
    """
    name = weight_name(path)
    if expected.kind is not got.kind:
        return name, f"a {got.kind.value} node where the weights have a {expected.kind.value}"
    if expected.kind is TreeKind.DICT and expected.children_names != got.children_names:
        return name, (f"dict keys {list(got.children_names)} where the weights have "
                      f"{list(expected.children_names)}")
    if expected.kind is TreeKind.CUSTOM and (expected.custom_name, expected.custom_auxdata) != (
            got.custom_name, got.custom_auxdata):
        return name, (f"a node of type {got.custom_name} where the weights have one of type "
                      f"{expected.custom_name} (or their auxiliary data differ)")
    if len(expected.children) != len(got.children):
        return name, (f"{len(got.children)} children where the weights have "
                      f"{len(expected.children)}")
    keys = expected.children_names or tuple(str(i) for i in range(len(expected.children)))
    for key, e, g in zip(keys, expected.children, got.children):
        found = tree_difference(e, g, (*path, key))
        if found is not None:
            return found
    return None


def check_matches_weights(function: str | None, weights_tree: TreeSpec, weights: Sequence[WeightRecord],
                          tree: TreeSpec, leaves: Sequence[LeafSpec]) -> None:
    """Checks a function's weights argument (or new weights) against the bundle's weights.

    Args:
        function: the function's name, or None when checking new weights.
        weights_tree, weights: the bundle's weights.
        tree, leaves: the structure and flat leaves to check.

    Raises:
        BundleMismatchError: naming the function and the key path.
    """
    found = tree_difference(weights_tree, tree)
    if found is not None:
        raise BundleMismatchError(function, found[0], f"the pytree has {found[1]}")
    for weight, leaf in zip(weights, leaves, strict=True):
        if leaf.dtype != weight.dtype:
            raise BundleMismatchError(function, weight.name,
                                      f"dtype {leaf.dtype} where the weight is {weight.dtype}")
        if tuple(leaf.shape) != weight.shape:
            raise BundleMismatchError(function, weight.name,
                                      f"shape {format_shape(leaf.shape)} where the weight has {format_shape(weight.shape)}")


def agreed_shardings(weights: Sequence[WeightRecord],
                     per_function: Mapping[str, Sequence[NamedShardingRecord | None]]
                     ) -> tuple[NamedShardingRecord | None, ...]:
    """The sharding of each weight that the functions record (None where none does).

    A sharding over a mesh without axes counts as none.

    Raises:
        BundleMismatchError: two functions record different shardings for a weight.
    """
    agreed: list[tuple[str, NamedShardingRecord] | None] = [None] * len(weights)
    for function, shardings in per_function.items():
        for i, (weight, sharding) in enumerate(zip(weights, shardings, strict=True)):
            if sharding is None or not sharding.mesh.axis_names:
                continue
            previous = agreed[i]
            if previous is None:
                agreed[i] = (function, sharding)
            elif previous[1] != sharding:
                raise BundleMismatchError(
                    function, weight.name, f"the sharding {sharding} differs from {previous[1]}, "
                    f"recorded by function '{previous[0]}'; export both with the same sharding")
    return tuple(None if a is None else a[1] for a in agreed)


def check_files(manifest: Manifest, entries: Mapping[str, int]) -> None:
    """Checks that the bundle directory holds exactly the manifest's files, at its root, each a regular
    file of the recorded size (``entries``: as :func:`~jaxport.domain.checked_directory.check_listing` reads).

    Raises:
        ArtifactError: naming a missing, extra, truncated or longer file, or what is not a regular file.
    """
    expected = {e.file for e in manifest.functions} | {WEIGHTS_FILE}
    if manifest.examples:
        expected.add(EXAMPLES_FILE)
    if manifest.generation is not None and manifest.generation.tokenizer is not None:
        expected.add(manifest.generation.tokenizer)
    if set(manifest.files) != expected:
        raise ArtifactError(f"{MANIFEST_FILE}: the digests list {sorted(manifest.files)} but the "
                            f"bundle's files are {sorted(expected)}")
    check_listing(manifest.files, entries, MANIFEST_FILE, "bundle", folders=False)


def check_weights_digests(header_sha256: str, weights: Sequence[WeightRecord], header: str,
                          digests: Sequence[str]) -> None:
    """Checks the weights file's header and each weight's stored bytes against the manifest's digests
    (``header_sha256`` and each weight's), given the digests found (``header``, ``digests``).

    Raises:
        ArtifactError: naming ``params.safetensors`` and its header or the weight's key path.
    """
    for part, found, expected in [("its header", header, header_sha256),
                                  *((f"the weight '{w.name}'", d, w.sha256) for w, d in zip(weights, digests))]:
        if found != expected:
            raise ArtifactError(f"{WEIGHTS_FILE}: the digest of {part} does not match its manifest: "
                                f"sha256 {found} where {expected} was recorded")


@dataclass(frozen=True, slots=True)
class TensorEntry:
    """One entry of a safetensors header: dtype code, shape, and byte range in the data."""

    dtype: str
    shape: tuple[int, ...]
    begin: int
    end: int


def check_weights_header(weights: Sequence[WeightRecord], entries: Mapping[str, TensorEntry],
                         data_size: int, file: str = WEIGHTS_FILE) -> None:
    """Checks a safetensors file's header against the manifest's records of its arrays.

    Args:
        weights: the records (the weights, or the arrays of the golden examples).
        entries, data_size: what the file's header lists and the size of its data.
        file: the file's name, for messages.

    Raises:
        ArtifactError: naming the file and the key of an array that is
            missing, extra, of another dtype or shape, or outside the data.
    """
    what = "weight" if file == WEIGHTS_FILE else "array"
    names = {w.name for w in weights}
    for name in entries:
        if name not in names:
            raise ArtifactError(f"{file} holds the {what} '{name}', which the manifest does not list")
    for w in weights:
        entry = entries.get(w.name)
        if entry is None:
            raise ArtifactError(f"{file} lacks the {what} '{w.name}'")
        if entry.dtype != w.safetensors_dtype:
            raise ArtifactError(f"{file}: the {what} '{w.name}' has dtype {entry.dtype} "
                                f"where the manifest records {w.safetensors_dtype}")
        if entry.shape != w.data_shape:
            raise ArtifactError(f"{file}: the {what} '{w.name}' has shape {format_shape(entry.shape)} "
                                f"where the manifest records {format_shape(w.data_shape)}")
        if not 0 <= entry.begin <= entry.end <= data_size or entry.end - entry.begin != w.nbytes:
            raise ArtifactError(f"{file}: the bytes of the {what} '{w.name}' "
                                f"[{entry.begin}, {entry.end}) do not fit its shape and dtype "
                                f"({w.nbytes} bytes) inside the {data_size} bytes of data")
