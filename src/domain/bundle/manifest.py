"""What a bundle is: its files and its manifest, as records and JSON.

A bundle is a directory with ``manifest.json``, one artifact per function
(``NAME.jaxport``), the weights (``params.safetensors``) and, when it was
saved with golden examples, their arrays (``examples.safetensors``). The
manifest names the functions and their files, says whether each takes the
weights as its first argument, records the weights' pytree structure and,
per leaf in flattening order, its key path, dtype and shape, the user's
metadata, the examples (per function: the pytrees of the caller's inputs and
of the outputs, and each array's name, dtype and shape), and the size and
SHA-256 digest of every other file.

Weights are named by their key paths (:mod:`jaxport.domain.bundle.names`).

Format versions (``format_version``):
  * 1 (2026-11-30): the first. Later keys that readers skip when they do not
    know them: ``producer`` (the versions that wrote the bundle, :mod:`jaxport.domain.artifact.producer`).
  * 2 (2026-12-01): golden examples (``examples`` and ``examples.safetensors``).
    A bundle without examples is still written as version 1.

This module reads and writes the JSON and nothing else: no files, no JAX
(the adapters turn JAX's key entries into the texts used here). A manifest
that does not decode raises ``ArtifactError`` naming ``manifest.json`` and
the field.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from jaxport.domain.artifact.record import TreeSpec
from jaxport.domain.checked_directory import (
    MANIFEST_FILE as MANIFEST_FILE, FileDigest, JsonReader, dump_json, files_from_json, files_to_json, load_json,
    tree_from_json, tree_to_json
)
from jaxport.domain.errors import ArtifactError
from jaxport.domain.artifact.producer import Producer
from jaxport.domain.generation.spec import MANIFEST_KEY as GENERATION_KEY, GenerationSpec

#: The newest format version this jaxport reads and writes.
FORMAT_VERSION = 2
#: The version a bundle without examples is written as (older jaxport reads it).
EXAMPLES_FREE_VERSION = 1
FORMAT_NAME = "jaxport-bundle"
WEIGHTS_FILE = "params.safetensors"
EXAMPLES_FILE = "examples.safetensors"

#: The stored dtypes a bundle supports: NumPy-style name -> (safetensors code, bytes per element).
SAFETENSORS_DTYPES: dict[str, tuple[str, int]] = {
    "bool": ("BOOL", 1), "int8": ("I8", 1), "int16": ("I16", 2), "int32": ("I32", 4),
    "int64": ("I64", 8), "uint8": ("U8", 1), "uint16": ("U16", 2), "uint32": ("U32", 4),
    "uint64": ("U64", 8), "float16": ("F16", 2), "bfloat16": ("BF16", 2),
    "float32": ("F32", 4), "float64": ("F64", 8), "float8_e4m3fn": ("F8_E4M3", 1),
    "float8_e5m2": ("F8_E5M2", 1),
}

@dataclass(frozen=True, slots=True)
class WeightRecord:
    """One leaf of the weights.

    Attributes:
        name: the key path (see :mod:`jaxport.domain.bundle.manifest`).
        dtype: the leaf's dtype as JAX names it (``"float32"``, ``"key<fry>"``).
        shape: the leaf's shape.
        data_dtype: the dtype stored in the weights file (a key array stores
            its key data, ``"uint32"``; otherwise ``dtype``).
        data_shape: the stored shape (a key array's shape plus the key's).
        key_impl: the PRNG implementation of a key array (``"threefry2x32"``), else None.
        sha256: the SHA-256 (hex) of the stored bytes, so that a changed
            weight is found, and named, without hashing the whole file.
    """

    name: str
    dtype: str
    shape: tuple[int, ...]
    data_dtype: str
    data_shape: tuple[int, ...]
    key_impl: str | None = None
    sha256: str = ""

    @property
    def nbytes(self) -> int:
        """The stored size in bytes."""
        return math.prod(self.data_shape) * SAFETENSORS_DTYPES[self.data_dtype][1]

    @property
    def safetensors_dtype(self) -> str:
        """The dtype code of the stored data in the safetensors header (``"BF16"``)."""
        return SAFETENSORS_DTYPES[self.data_dtype][0]


@dataclass(frozen=True, slots=True)
class FunctionEntry:
    """One function of a bundle: its name, its file and whether it takes the weights first."""

    name: str
    file: str
    takes_params: bool = True


@dataclass(frozen=True, slots=True)
class Example:
    """One golden example of a function: the caller's inputs and the outputs JAX computed at save.

    Attributes:
        function: the function's name.
        index: the example's place among the function's examples (from 0).
        in_tree: the pytree of the caller's ``(args, kwargs)`` (without the
            bundle's weights, for a function that takes them).
        out_tree: the pytree of the results.
        inputs, outputs: one record per flat input and output, in flattening
            order, named as :func:`jaxport.domain.bundle.names.example_names` says.
    """

    function: str
    index: int
    in_tree: TreeSpec
    out_tree: TreeSpec
    inputs: tuple[WeightRecord, ...]
    outputs: tuple[WeightRecord, ...]

    @property
    def arrays(self) -> tuple[WeightRecord, ...]:
        """The inputs, then the outputs: the example's arrays in its file."""
        return self.inputs + self.outputs


def example_counts(examples: Sequence[Example]) -> dict[str, int]:
    """The number of examples of each function that has some, in order."""
    return dict(Counter(example.function for example in examples))


def examples_line(counts: Mapping[str, int]) -> str:
    """What ``jaxport inspect`` says of a directory's examples.

    >>> examples_line({"predict": 2, "loss": 1})
    'golden examples: predict 2, loss 1 (jaxport check --numerics runs them)'
    """
    return ("golden examples: " + ", ".join(f"{name} {count}" for name, count in counts.items())
            + " (jaxport check --numerics runs them)")


def examples_to_json(examples: Sequence[Example], file: str) -> dict[str, Any]:
    """The examples as JSON: ``{"file": ..., "functions": {name: [example, ...]}}``."""
    functions: dict[str, list[Any]] = {}
    for e in examples:
        functions.setdefault(e.function, []).append({
            "in_tree": tree_to_json(e.in_tree), "out_tree": tree_to_json(e.out_tree),
            "inputs": [_weight_to_json(w) for w in e.inputs],
            "outputs": [_weight_to_json(w) for w in e.outputs]})
    return {"file": file, "functions": functions}


def examples_from_json(doc: Any, where: str, file: str, functions: Sequence[str] | None = None,
                       owner: str = "bundle") -> tuple[Example, ...]:
    """The examples that :func:`examples_to_json` wrote, stored in ``file``, each of one of
    ``functions`` (the functions of the ``owner`` directory; None: any).

    Raises:
        ArtifactError: naming ``where``, when ``doc`` is not such a table.
    """
    r = JsonReader(doc, where)
    if r.get("file", str) != file:
        raise ArtifactError(f"{where}: 'file' is not {file!r}")
    examples: list[Example] = []
    for function, listed in r.get("functions", dict).items():
        if not isinstance(listed, list):
            raise ArtifactError(f"{where}: functions.{function} is not a list of examples")
        for index, item in enumerate(listed):
            e = JsonReader(item, f"{where}: functions.{function}[{index}]")
            at = e.where
            in_tree = tree_from_json(e.get("in_tree", dict), f"{at}: in_tree")
            out_tree = tree_from_json(e.get("out_tree", dict), f"{at}: out_tree")
            inputs = tuple(_weight_from_json(x) for x in e.child_list("inputs"))
            outputs = tuple(_weight_from_json(x) for x in e.child_list("outputs"))
            if (in_tree.num_leaves, out_tree.num_leaves) != (len(inputs), len(outputs)):
                raise ArtifactError(f"{at}: its trees have {in_tree.num_leaves} inputs and "
                                    f"{out_tree.num_leaves} outputs, {len(inputs)} and {len(outputs)} are listed")
            examples.append(Example(function, index, in_tree, out_tree, inputs, outputs))
    names = [w.name for e in examples for w in e.arrays]
    if len(set(names)) != len(names):
        raise ArtifactError(f"{where}: two arrays of the examples have the same name")
    unknown = [] if functions is None else sorted({e.function for e in examples} - set(functions))
    if unknown:
        raise ArtifactError(f"{MANIFEST_FILE}: examples of functions that the {owner} lacks: {unknown}")
    return tuple(examples)


@dataclass(frozen=True)
class Manifest:
    """Everything ``manifest.json`` says.

    >>> m = Manifest((FunctionEntry("f", "f.jaxport"),), TreeSpec.of_dict({"w": TreeSpec.leaf()}),
    ...              (WeightRecord("w", "float32", (2,), "float32", (2,)),), {"epoch": 3},
    ...              {"f.jaxport": FileDigest(10, "00"), "params.safetensors": FileDigest(72, "11")})
    >>> Manifest.from_json(m.to_json()) == m
    True
    """

    functions: tuple[FunctionEntry, ...]
    params_tree: TreeSpec
    weights: tuple[WeightRecord, ...]
    metadata: Mapping[str, Any] = field(default_factory=dict)
    files: Mapping[str, FileDigest] = field(default_factory=dict)
    format_version: int = FORMAT_VERSION
    #: The SHA-256 (hex) of the weights file's header (its first bytes up to the data).
    weights_header_sha256: str = ""
    #: The versions that wrote the bundle (None in bundles written before jaxport recorded them).
    producer: Producer | None = None
    #: The golden examples, stored in ``examples.safetensors`` (none: the bundle has no such file).
    examples: tuple[Example, ...] = ()
    #: How the bundle generates tokens (None: it does not).
    generation: GenerationSpec | None = None

    @property
    def total_weight_bytes(self) -> int:
        """The stored size of all weights."""
        return sum(w.nbytes for w in self.weights)

    def function(self, name: str) -> FunctionEntry:
        """The entry of function ``name``.

        Raises:
            KeyError: no function has that name.
        """
        for entry in self.functions:
            if entry.name == name:
                return entry
        raise KeyError(f"The bundle has no function {name!r}; it has "
                       f"{[e.name for e in self.functions]}")

    def to_json(self) -> bytes:
        """The manifest as indented UTF-8 JSON."""
        doc = {
            "format": FORMAT_NAME,
            "format_version": self.format_version,
            "functions": {e.name: {"file": e.file, "takes_params": e.takes_params}
                          for e in self.functions},
            "params": {"file": WEIGHTS_FILE, "header_sha256": self.weights_header_sha256,
                       **weights_to_json(self.params_tree, self.weights)},
            "metadata": dict(self.metadata),
            "files": files_to_json(self.files),
        }
        if self.producer is not None:
            doc["producer"] = self.producer.to_json()
        if self.examples:
            doc["examples"] = examples_to_json(self.examples, EXAMPLES_FILE)
        if self.generation is not None:
            doc[GENERATION_KEY] = self.generation.to_json()
        return dump_json(doc)

    @staticmethod
    def from_json(data: bytes) -> Manifest:
        """The manifest that ``data`` holds.

        Raises:
            ArtifactError: it is not JSON, is of a newer format version than
                this jaxport reads, or a field is missing or of the wrong type.
        """
        doc = load_json(data)
        r = JsonReader(doc, MANIFEST_FILE)
        if r.get("format", str) != FORMAT_NAME:
            raise ArtifactError(f"{MANIFEST_FILE}: 'format' is not {FORMAT_NAME!r}")
        version = r.get("format_version", int)
        if version > FORMAT_VERSION:
            raise ArtifactError(
                f"{MANIFEST_FILE}: the bundle has format version {version}, newer than the "
                f"newest this jaxport reads ({FORMAT_VERSION}); upgrade jaxport to load it.")
        if version < 1:
            raise ArtifactError(f"{MANIFEST_FILE}: format version {version} does not exist")
        functions = tuple(
            FunctionEntry(name, f.get("file", str), f.get("takes_params", bool))
            for name, f in r.child("functions").items())
        params = r.child("params")
        if params.get("file", str) != WEIGHTS_FILE:
            raise ArtifactError(f"{MANIFEST_FILE}: 'params.file' is not {WEIGHTS_FILE!r}")
        tree, weights = weights_from_json(params, "params")
        files = files_from_json(r.child("files"))
        examples = examples_from_json(doc["examples"], f"{MANIFEST_FILE}: examples", EXAMPLES_FILE,
                                      [f.name for f in functions]) if version >= 2 and "examples" in doc else ()
        generation = (GenerationSpec.from_json(doc[GENERATION_KEY], f"{MANIFEST_FILE}: {GENERATION_KEY}")
                      if GENERATION_KEY in doc else None)
        return Manifest(functions, tree, weights, r.get("metadata", dict), files, version,
                        params.get("header_sha256", str), Producer.from_json(doc.get("producer")), examples,
                        generation)


def _weight_to_json(w: WeightRecord) -> dict[str, Any]:
    doc: dict[str, Any] = {"key_path": w.name, "dtype": w.dtype, "shape": list(w.shape), "sha256": w.sha256}
    if w.key_impl is not None:
        doc["key_impl"] = w.key_impl
    if (w.data_dtype, w.data_shape) != (w.dtype, w.shape):
        doc["stored_as"] = {"dtype": w.data_dtype, "shape": list(w.data_shape)}
    return doc


def _weight_from_json(r: JsonReader) -> WeightRecord:
    name = r.get("key_path", str)
    shape = r.shape("shape")
    dtype = r.get("dtype", str)
    stored = r.child("stored_as") if "stored_as" in r.doc else r
    data_dtype = stored.get("dtype", str)
    if data_dtype not in SAFETENSORS_DTYPES:
        raise ArtifactError(f"{r.where}: the weight '{name}' has the unsupported dtype {data_dtype!r}")
    key_impl = r.optional("key_impl", str)
    return WeightRecord(name, dtype, shape, data_dtype, stored.shape("shape"), key_impl, r.get("sha256", str))


def weights_to_json(tree: TreeSpec, weights: Sequence[WeightRecord]) -> dict[str, Any]:
    """The weights' pytree and records as JSON: ``{"tree": ..., "leaves": [...]}``."""
    return {"tree": tree_to_json(tree), "leaves": [_weight_to_json(w) for w in weights]}


def weights_from_json(r: JsonReader, what: str) -> tuple[TreeSpec, tuple[WeightRecord, ...]]:
    """The pytree and records that :func:`weights_to_json` wrote in the field ``what`` of a manifest.

    Raises:
        ArtifactError: naming ``manifest.json`` and ``what``, when they are malformed or differ in number.
    """
    tree = tree_from_json(r.get("tree", dict), f"{MANIFEST_FILE}: {what}.tree")
    weights = tuple(_weight_from_json(leaf) for leaf in r.child_list("leaves"))
    if tree.num_leaves != len(weights):
        raise ArtifactError(f"{MANIFEST_FILE}: the {what} tree has {tree.num_leaves} leaves "
                            f"but {len(weights)} are listed")
    return tree, weights
