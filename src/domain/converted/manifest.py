"""The manifest of every directory jaxport converts to, whatever the target: records and JSON.

A converted directory holds the target's own files (a SavedModel's
``saved_model.pb`` and ``variables/``, IREE's ``.vmfb`` modules, an ONNX
model...) and one ``manifest.json``: at the directory's root, or in
``assets.extra/jaxport/`` for a SavedModel (TensorFlow Serving leaves that
folder alone; see :data:`jaxport.domain.targets.registry.TargetEntry.manifest_dir`). It records:

* ``target`` (``"savedmodel"``, ``"iree"``, ...) and ``target_details``, an
  opaque JSON object the target owns (IREE's triple and CPU features);
* per function, its :class:`~jaxport.domain.calls.signature.Signature` (the caller's trees, each flat
  input's and output's wire name, dtype and shape as text and as an
  expression tree, the constraints, how many weights the directory binds)
  and its variants: a file and the binding of dimension variables it was
  compiled for (one variant with no binding for a runtime that takes any
  size);
* the weights' table, the golden examples, and the size and SHA-256 of every
  file of the directory but the manifest (paths relative to the
  directory's root, ``/``-separated). A directory holds no other file;
* ``jax_version``, where the source records the JAX that exported it
  (serialization version 12): the call checks cite JAX's documentation as
  that JAX does;
* ``quantization``, only for a directory converted in reduced precision: the
  mode and its tolerance (:mod:`.quantization`);
* ``generation``, only for a directory converted from a generative bundle: its
  spec (:mod:`jaxport.domain.generation.spec`), the tokenizer's file among the files.

One version rule: readers skip keys they do not know; a newer
``format_version`` is refused with a message naming both versions.

Format versions (``format_version`` of ``"format": "jaxport-converted"``):
  * 1 (2026-12-01): the first. (Directories written before it, with the
    formats ``jaxport-iree`` and ``jaxport-savedmodel``, are not read:
    convert them again.)

This module opens no file (the commands that read it: :mod:`jaxport.application.cli.run`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jaxport.domain.calls.signature import AvalRecord, DType, Signature
from jaxport.domain.calls.trees import TreeSpec
from jaxport.domain.bundle.manifest import (
    Example, WeightRecord, examples_from_json, examples_to_json, weights_from_json, weights_to_json
)
from jaxport.domain.checked_directory import (
    MANIFEST_FILE as MANIFEST_FILE, FileDigest, JsonReader, dump_json, files_from_json, files_to_json, load_json,
    manifest_format as manifest_format, tree_from_json, tree_to_json
)
from jaxport.domain.path_kind import CONVERTED_FORMATS
from jaxport.domain.symbolic.json_trees import constraint_scope, constraint_trees, dim_tree, parse_dims
from jaxport.domain.errors import ArtifactError
from jaxport.domain.errors import UncompiledSizeError
from jaxport.domain.generation.spec import MANIFEST_KEY as GENERATION_KEY, GenerationSpec

if TYPE_CHECKING:  # loading an IREE directory needs no quantization (4 ms in a fresh process)
    from .quantization import Quantization

FORMAT_NAME = CONVERTED_FORMATS[0]
#: The newest format version this jaxport reads and writes.
FORMAT_VERSION = 1


def _signature_json(sig: Signature) -> dict[str, Any]:
    """A function's signature as a JSON object (see the module's docstring)."""
    scope = constraint_scope(sig.constraints)

    def arrays(names: Sequence[str], avals: Sequence[AvalRecord]) -> list[Any]:
        return [{"name": n, "dtype": a.dtype.value, "shape": list(a.shape),
                 "dims": [dim_tree(d) for d in parse_dims(a.shape, scope)]} for n, a in zip(names, avals)]

    return {"in_tree": tree_to_json(sig.in_tree), "out_tree": tree_to_json(sig.out_tree),
            "inputs": arrays(sig.input_names, sig.in_avals), "outputs": arrays(sig.output_names, sig.out_avals),
            "constraints": constraint_trees(scope), "nr_weights": sig.nr_weights}


def _signature(name: str, r: JsonReader) -> Signature:
    """The signature :func:`_signature_json` wrote (the trees are only for readers in other languages).

    Raises:
        ArtifactError: naming where, when ``r`` is not such a signature.
    """
    constraints = tuple(c.get("text", str) for c in r.child_list("constraints"))
    nr_weights = r.get("nr_weights", int)
    sig = Signature(name, tree_from_json(r.get("in_tree", dict), r.where),
                    tuple(_aval(a) for a in r.child_list("inputs")), tree_from_json(r.get("out_tree", dict), r.where),
                    tuple(_aval(a) for a in r.child_list("outputs")), constraints, nr_weights)
    if (sig.in_tree.num_leaves, sig.out_tree.num_leaves) != (len(sig.in_avals), len(sig.out_avals)):
        raise ArtifactError(f"{r.where}: the trees' leaves and the arrays listed differ in number")
    return sig


def _aval(r: JsonReader) -> AvalRecord:
    shape = r.get("shape", list)
    if not all(isinstance(d, str) and d for d in shape):
        raise ArtifactError(f"{r.where}: 'shape' is not a list of dimension strings")
    try:
        return AvalRecord(tuple(shape), DType(r.get("dtype", str)))
    except ValueError:
        raise ArtifactError(f"{r.where}: unknown dtype {r.doc.get('dtype')!r}") from None


@dataclass(frozen=True, slots=True)
class Variant:
    """One compiled form of a function: its file, and the dimension variables' values it was made
    for (none: it takes any size the signature allows)."""

    file: str
    dims: tuple[tuple[str, int], ...] = ()

    @property
    def binding(self) -> dict[str, int]:
        """The dimension variables' values."""
        return dict(self.dims)


@dataclass(frozen=True, slots=True)
class ConvertedFunction:
    """One function of a converted directory: its signature and its variants (at least one)."""

    signature: Signature
    variants: tuple[Variant, ...]

    @property
    def name(self) -> str:
        """The function's name."""
        return self.signature.name

    def variant_for(self, dims: Mapping[str, int]) -> Variant:
        """The variant that runs a call whose dimension variables take the values ``dims``.

        Raises:
            UncompiledSizeError: none does; the message names the function, a
                variable whose value no closest variant has, and every binding compiled.
        """
        wanted = dict(dims)
        best: list[str] = []
        for variant in self.variants:
            if not variant.dims or variant.binding == wanted:
                return variant
            differ = sorted(k for k in wanted if variant.binding.get(k) != wanted[k])
            if not best or len(differ) < len(best):
                best = differ
        variable = best[0] if best else next(iter(sorted(wanted)), "")
        raise UncompiledSizeError(self.name, variable, wanted.get(variable, 0),
                                  [v.binding for v in self.variants])


@dataclass(frozen=True, slots=True)
class WeightsTable:
    """The weights a directory binds: their pytree, each leaf's record, and where they are.

    Attributes:
        tree: the weights' pytree structure.
        leaves: per leaf in flattening order (with each one's digest).
        file: the safetensors file holding them (``params.safetensors``), or
            ``""`` where the target keeps them in its own form (a SavedModel's variables).
        header_sha256: the SHA-256 (hex) of that file's header, ``""`` without a file.
    """

    tree: TreeSpec
    leaves: tuple[WeightRecord, ...]
    file: str = ""
    header_sha256: str = ""


@dataclass(frozen=True)
class ConvertedManifest:
    """Everything a converted directory's ``manifest.json`` says.

    Attributes:
        target: the target's registry name (:mod:`jaxport.domain.targets.registry`).
        target_details: what the target records of itself (opaque JSON object).
        functions: in the source's order.
        weights: the weights bound (None without weights).
        examples: the golden examples carried, and their file.
        files: every file of the directory but the manifest -> its size and digest.
        jax_version: the version of the JAX that exported the source (what
            serialization version 12 records; None before it), for the reader.
    """

    target: str
    target_details: Mapping[str, Any]
    functions: tuple[ConvertedFunction, ...]
    weights: WeightsTable | None = None
    examples: tuple[Example, ...] = ()
    examples_file: str = ""
    files: Mapping[str, FileDigest] = field(default_factory=dict)
    format_version: int = FORMAT_VERSION
    jax_version: str | None = None
    quantization: Quantization | None = None
    #: How the functions generate tokens, carried from a generative bundle (None: they do not).
    generation: GenerationSpec | None = None

    def __repr__(self) -> str:
        return f"<ConvertedManifest of {self.target}: {self.brief()}>"

    def brief(self) -> str:
        """One line: the functions, variants, weights and bytes (``print(jaxport.convert(...))`` shows it).

        >>> sig = Signature("f", TreeSpec.of_tuple(TreeSpec.of_tuple(TreeSpec.leaf()), TreeSpec.of_dict({})),
        ...                 (AvalRecord(("b",), DType.FLOAT32),), TreeSpec.leaf(), (AvalRecord(("b",), DType.FLOAT32),))
        >>> m = ConvertedManifest("onnx", {}, (ConvertedFunction(sig, (Variant("f.onnx", ()),)),),
        ...                       files={"f.onnx": FileDigest(1200, "00")})
        >>> m
        <ConvertedManifest of onnx: 1 function (f), 1 variant, 1200 bytes>
        """
        names = [f.name for f in self.functions]
        variants = sum(len(f.variants) for f in self.functions)
        total = sum(d.size for d in self.files.values())
        weights = "" if self.weights is None else \
            f", {len(self.weights.leaves)} weights ({sum(w.nbytes for w in self.weights.leaves)} bytes)"
        return (f"{len(names)} function{'' if len(names) == 1 else 's'} ({', '.join(names)}), {variants} "
                f"variant{'' if variants == 1 else 's'}{weights}, {total} bytes")

    def function(self, name: str) -> ConvertedFunction:
        """The function ``name``.

        Raises:
            KeyError: there is none; the message lists those there are.
        """
        for f in self.functions:
            if f.name == name:
                return f
        raise KeyError(f"The directory has no function {name!r}; it has {[f.name for f in self.functions]}")

    def to_json(self) -> bytes:
        """The manifest as indented UTF-8 JSON."""
        doc: dict[str, Any] = {
            "format": FORMAT_NAME, "format_version": self.format_version,
            "target": self.target, "target_details": dict(self.target_details),
            "functions": {f.name: {"signature": _signature_json(f.signature),
                                   "variants": [{"file": v.file, "dims": dict(v.dims)} for v in f.variants]}
                          for f in self.functions},
            "weights": None if self.weights is None else {
                "file": self.weights.file, "header_sha256": self.weights.header_sha256,
                **weights_to_json(self.weights.tree, self.weights.leaves)},
            "files": files_to_json(self.files),
        }
        if self.examples:
            doc["examples"] = examples_to_json(self.examples, self.examples_file)
        if self.jax_version is not None:
            doc["jax_version"] = self.jax_version
        if self.quantization is not None:
            doc["quantization"] = self.quantization.to_json()
        if self.generation is not None:
            doc[GENERATION_KEY] = self.generation.to_json()
        return dump_json(doc)

    @staticmethod
    def from_json(data: bytes) -> ConvertedManifest:
        """The manifest that ``data`` holds.

        Raises:
            ArtifactError: it is not JSON, not a converted directory's manifest
                (an older jaxport's: convert again), of a newer format version,
                or a field is missing or of the wrong type.
        """
        r = JsonReader(load_json(data), MANIFEST_FILE)
        fmt = r.get("format", str)
        if fmt != FORMAT_NAME:
            raise ArtifactError(f"{MANIFEST_FILE}: the format {fmt!r} is not {FORMAT_NAME!r}"
                                + (" (a directory that an older jaxport converted: convert the source again)"
                                   if fmt in ("jaxport-iree", "jaxport-savedmodel") else ""))
        version = r.get("format_version", int)
        if not 1 <= version <= FORMAT_VERSION:
            raise ArtifactError(f"{MANIFEST_FILE}: format version {version} is newer than {FORMAT_VERSION}, "
                                "the newest this jaxport reads: upgrade jaxport to load it.")
        functions = tuple(_function(name, f) for name, f in r.child("functions").items())
        if not functions:
            raise ArtifactError(f"{MANIFEST_FILE}: the directory has no function")
        weights = None
        if r.doc.get("weights") is not None:
            w = r.child("weights")
            weights = WeightsTable(*weights_from_json(w, "weights"), w.optional("file", str) or "",
                                   w.optional("header_sha256", str) or "")
        files = files_from_json(r.child("files"))
        examples: tuple[Example, ...] = ()
        examples_file = ""
        if r.doc.get("examples") is not None:
            examples_file = r.child("examples").get("file", str)
            examples = examples_from_json(r.doc["examples"], f"{MANIFEST_FILE}: examples", examples_file,
                                          [f.name for f in functions], "directory")
        jax_version = r.optional("jax_version", str)
        quantized = r.doc.get("quantization")
        quantization = None
        if quantized is not None:
            from .quantization import Quantization  # 4 ms that only a quantized manifest pays

            quantization = Quantization.from_json(quantized, MANIFEST_FILE)
        generation = (GenerationSpec.from_json(r.doc[GENERATION_KEY], f"{MANIFEST_FILE}: {GENERATION_KEY}")
                      if r.doc.get(GENERATION_KEY) is not None else None)
        return ConvertedManifest(r.get("target", str), r.get("target_details", dict), functions, weights,
                                 examples, examples_file, files, version, jax_version, quantization, generation)


def _function(name: str, r: JsonReader) -> ConvertedFunction:
    variants = []
    for v in r.child_list("variants"):
        dims = v.child("dims")
        values = tuple(sorted(dims.doc.items()))
        if not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for _, x in values):
            raise ArtifactError(f"{dims.where}: the dimension values are not sizes")
        variants.append(Variant(v.get("file", str), values))
    if not variants:
        raise ArtifactError(f"{r.where}: the function has no variant")
    return ConvertedFunction(_signature(name, r.child("signature")), tuple(variants))


