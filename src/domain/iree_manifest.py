"""The manifest of a directory of IREE modules: what ``jaxport.to_iree`` wrote, as records and JSON.

A directory holds ``manifest.json``; one compiled module (``.vmfb``) per
function and binding of its dimension variables (``predict.b=8.vmfb``; a
static function's is ``predict.vmfb``); and, when a function reads weights,
the bundle's weights file ``params.safetensors``, which every module reads
as IREE parameters of scope ``model``, keyed by the weights' key paths;
and, when the bundle had golden examples, their ``examples.safetensors``. The
manifest records each function's signature as its callers see it (the
weights left out), the bindings compiled for, the target, the weights'
table, the examples (as a bundle's manifest does), and the size and SHA-256
digest of every other file.

Format versions (``format_version``):
  * 1 (2026-12): the first.
  * 2 (2026-12-01): golden examples (``examples`` and ``examples.safetensors``);
    a directory without examples is still written as version 1.

This module reads and writes the JSON and checks a directory's listing
against it; it opens no file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .artifact import ArtifactRecord, TreeSpec
from .bundle import (
    EXAMPLES_FILE, WEIGHTS_FILE, Example, FileDigest, JsonReader, WeightRecord, example_counts,
    examples_from_json, examples_line, examples_to_json, tree_from_json, tree_to_json, weight_from_json, weight_to_json)
from .errors import ArtifactError
from .iree_target import IreeTarget
from .runtime_errors import UncompiledSizeError
from .signature_record import signature_from_json, signature_to_json

FORMAT_NAME = "jaxport-iree"
#: The newest format version this jaxport reads and writes.
FORMAT_VERSION = 2
#: The version a directory without examples is written as (older jaxport reads it).
EXAMPLES_FREE_VERSION = 1
MANIFEST_FILE = "manifest.json"
#: The scope of the modules' parameters (``iree-run-module --parameters=model=params.safetensors``).
PARAMETER_SCOPE = "model"


def module_file(function: str, dims: Mapping[str, int]) -> str:
    """The file name of ``function``'s module for ``dims`` (function names hold no ``=``).

    >>> module_file("predict", {"t": 16, "b": 1}), module_file("f", {})
    ('predict.b=1,t=16.vmfb', 'f.vmfb')
    """
    if not dims:
        return f"{function}.vmfb"
    return f"{function}." + ",".join(f"{k}={v}" for k, v in sorted(dims.items())) + ".vmfb"


@dataclass(frozen=True, slots=True)
class CompiledModule:
    """One compiled module: its file and the values of the dimension variables it was compiled for."""

    file: str
    dims: tuple[tuple[str, int], ...] = ()

    @property
    def binding(self) -> dict[str, int]:
        """The dimension variables' values."""
        return dict(self.dims)


@dataclass(frozen=True, slots=True)
class IreeFunction:
    """One function of the directory.

    Attributes:
        name: the function's name.
        signature: what its callers give and get (a bundle's weights left out).
        takes_params: whether the function reads the weights (as IREE parameters).
        modules: one per binding compiled for (one, with no binding, when static).
    """

    name: str
    signature: ArtifactRecord
    takes_params: bool
    modules: tuple[CompiledModule, ...]

    def module_for(self, dims: Mapping[str, int]) -> CompiledModule:
        """The module compiled for these values of the dimension variables.

        Raises:
            UncompiledSizeError: none was; the message names the function, a
                variable whose value no closest module has, and every binding compiled.
        """
        wanted = dict(dims)
        best: list[str] = []
        for module in self.modules:
            if module.binding == wanted:
                return module
            differ = sorted(k for k in wanted if module.binding.get(k) != wanted[k])
            if not best or len(differ) < len(best):
                best = differ
        variable = best[0] if best else next(iter(sorted(wanted)), "")
        raise UncompiledSizeError(self.name, variable, wanted.get(variable, 0),
                                  [m.binding for m in self.modules])


@dataclass(frozen=True)
class IreeManifest:
    """Everything ``manifest.json`` of an IREE directory says.

    Attributes:
        functions: the functions, in the source's order.
        target: what the modules were compiled for.
        compiler: the IREE compiler's version (a module runs on the runtime of that release).
        params_tree: the weights' pytree structure (None without weights).
        weights: the weights' table, per leaf in flattening order (with each one's digest).
        files: every file but the manifest -> its size and digest.
        weights_header_sha256: the SHA-256 (hex) of the weights file's header (its
            first bytes up to the data): with each weight's, it covers every byte of the
            file, and the loader checks them on several threads.
        examples: the golden examples of the bundle converted, in ``examples.safetensors``.
    """

    functions: tuple[IreeFunction, ...]
    target: IreeTarget
    compiler: str
    params_tree: TreeSpec | None = None
    weights: tuple[WeightRecord, ...] = ()
    files: Mapping[str, FileDigest] = field(default_factory=dict)
    format_version: int = FORMAT_VERSION
    weights_header_sha256: str = ""
    examples: tuple[Example, ...] = ()

    def function(self, name: str) -> IreeFunction:
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
        t = self.target
        doc = {
            "format": FORMAT_NAME,
            "format_version": self.format_version,
            "compiler": {"name": "iree", "version": self.compiler},
            "target": {"backend": t.backend, "requested_cpu": t.requested_cpu,
                       "requested_triple": t.requested_triple, "cpu": t.cpu,
                       "cpu_features": ",".join(t.cpu_features), "triple": t.triple,
                       "executable_format": t.executable_format},
            "functions": {f.name: {"signature": signature_to_json(f.signature),
                                   "takes_params": f.takes_params,
                                   "modules": [{"file": m.file, "dims": dict(m.dims)} for m in f.modules]}
                          for f in self.functions},
            "params": None if self.params_tree is None else {
                "file": WEIGHTS_FILE, "scope": PARAMETER_SCOPE, "header_sha256": self.weights_header_sha256,
                "tree": tree_to_json(self.params_tree), "leaves": [weight_to_json(w) for w in self.weights]},
            "files": {n: {"size": d.size, "sha256": d.sha256} for n, d in sorted(self.files.items())},
        }
        if self.examples:
            doc["examples"] = examples_to_json(self.examples, EXAMPLES_FILE)
        return (json.dumps(doc, indent=1, allow_nan=False) + "\n").encode("utf-8")

    @staticmethod
    def from_json(data: bytes) -> IreeManifest:
        """The manifest that ``data`` holds.

        Raises:
            ArtifactError: it is not JSON, not an IREE directory's manifest, of
                a newer format version, or a field is missing or of the wrong type.
        """
        r = JsonReader(_load(data), MANIFEST_FILE)
        if r.get("format", str) != FORMAT_NAME:
            raise ArtifactError(f"{MANIFEST_FILE}: 'format' is not {FORMAT_NAME!r}")
        version = r.get("format_version", int)
        if not 1 <= version <= FORMAT_VERSION:
            raise ArtifactError(f"{MANIFEST_FILE}: format version {version} is not one this jaxport "
                                f"reads (1 to {FORMAT_VERSION}); upgrade jaxport to load it.")
        t = r.child("target")
        features = t.get("cpu_features", str)
        target = IreeTarget(t.get("requested_cpu", str), t.get("requested_triple", str), t.get("cpu", str),
                            tuple(features.split(",")) if features else (), t.get("triple", str),
                            t.get("executable_format", str), t.get("backend", str))
        functions = tuple(_function_from_json(name, f) for name, f in r.child("functions").items())
        tree: TreeSpec | None = None
        weights: tuple[WeightRecord, ...] = ()
        header = ""
        if r.doc.get("params") is not None:
            params = r.child("params")
            header = params.get("header_sha256", str)
            tree = tree_from_json(params.get("tree", dict), f"{MANIFEST_FILE}: params.tree")
            weights = tuple(weight_from_json(leaf) for leaf in params.child_list("leaves"))
            if tree.num_leaves != len(weights):
                raise ArtifactError(f"{MANIFEST_FILE}: the params tree has {tree.num_leaves} leaves "
                                    f"but {len(weights)} are listed")
        files = {n: FileDigest(d.get("size", int), d.get("sha256", str)) for n, d in r.child("files").items()}
        examples = examples_from_json(r.doc["examples"], f"{MANIFEST_FILE}: examples", EXAMPLES_FILE) \
            if version >= 2 and "examples" in r.doc else ()
        unknown = sorted({e.function for e in examples} - {f.name for f in functions})
        if unknown:
            raise ArtifactError(f"{MANIFEST_FILE}: examples of functions that the directory lacks: {unknown}")
        return IreeManifest(functions, target, r.child("compiler").get("version", str), tree, weights,
                            files, version, header, examples)


def _load(data: bytes) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ArtifactError(f"{MANIFEST_FILE} is not valid JSON: {exc}") from exc


def _function_from_json(name: str, r: JsonReader) -> IreeFunction:
    modules = []
    for m in r.child_list("modules"):
        dims = m.child("dims")
        values = tuple(sorted(dims.doc.items()))
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for _, v in values):
            raise ArtifactError(f"{dims.where}: the dimension values are not sizes")
        modules.append(CompiledModule(m.get("file", str), values))
    if not modules:
        raise ArtifactError(f"{r.where}: the function has no module")
    return IreeFunction(name, signature_from_json(r.get("signature", dict), f"{r.where}: signature"),
                        r.get("takes_params", bool), tuple(modules))


def manifest_format(data: bytes) -> str | None:
    """The ``format`` that a ``manifest.json`` names (``"jaxport-iree"``), None when it names none."""
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    value = doc.get("format") if isinstance(doc, dict) else None
    return value if isinstance(value, str) else None


def check_listing(manifest: IreeManifest, entries: Mapping[str, int]) -> None:
    """Checks a directory's entries (name -> size, -1 for what is not a regular file) against ``manifest``.

    Raises:
        ArtifactError: a file is missing, extra, not a regular file, truncated
            or longer than recorded; or the manifest lists a module it has no digest of.
    """
    listed = {m.file for f in manifest.functions for m in f.modules}
    if manifest.params_tree is not None:
        listed.add(WEIGHTS_FILE)
    if manifest.examples:
        listed.add(EXAMPLES_FILE)
    if listed != set(manifest.files):
        raise ArtifactError(f"{MANIFEST_FILE}: the digests list {sorted(manifest.files)} but the "
                            f"directory's files are {sorted(listed)}")
    for name in sorted(set(entries) - listed - {MANIFEST_FILE}):
        raise ArtifactError(f"The directory holds a file that its manifest does not list: {name}")
    for name, digest in sorted(manifest.files.items()):
        size = entries.get(name)
        if size is None:
            raise ArtifactError(f"The directory's file {name} is missing")
        if size < 0:
            raise ArtifactError(f"The directory's {name} is not a regular file")
        if size != digest.size:
            what = "truncated" if size < digest.size else "longer than recorded"
            raise ArtifactError(f"The directory's file {name} is {what}: {size} bytes where the "
                                f"manifest records {digest.size}")


def check_digests(manifest: IreeManifest, names: Sequence[str], digests: Sequence[str]) -> None:
    """Checks files' SHA-256 digests (hex) against the manifest, before anything reads them.

    Raises:
        ArtifactError: a file changed after it was written (the message names it).
    """
    for name, digest in zip(names, digests, strict=True):
        if digest != manifest.files[name].sha256:
            raise ArtifactError(
                f"The digest of the directory's file {name} does not match its manifest (sha256 "
                f"{digest} where {manifest.files[name].sha256} was recorded): the file was damaged "
                "or changed after jaxport wrote it; convert the artifact again.")


def manifest_text(manifest: IreeManifest, path: str) -> str:
    """What ``jaxport inspect`` prints of the directory at ``path``: target, functions, modules, weights.

    >>> from .signature_record import signature
    >>> from .artifact import AvalRecord, DType, TreeSpec
    >>> sig = signature("f", TreeSpec.of_tuple(TreeSpec.of_tuple(TreeSpec.leaf()), TreeSpec.of_dict({})),
    ...                 (AvalRecord(("b",), DType.FLOAT32),), TreeSpec.leaf(), (AvalRecord(("b",), DType.FLOAT32),))
    >>> target = IreeTarget("host", "host", "znver4", ("+avx2",), "x86_64-unknown-unknown-eabi-elf",
    ...                     "embedded-elf-x86_64")
    >>> m = IreeManifest((IreeFunction("f", sig, False, (CompiledModule("f.b=8.vmfb", (("b", 8),)),)),),
    ...                  target, "3.13.0", files={"f.b=8.vmfb": FileDigest(1200, "00")})
    >>> print(manifest_text(m, "out"))
    IREE modules out (format 2, compiled by IREE 3.13.0): 1 function, 1 module
    compiled for x86_64 (CPU znver4, triple x86_64-unknown-unknown-eabi-elf), 1 CPU feature required; asked for CPU host, triple host
    f (float32[b]) -> float32[b]
      b=8: f.b=8.vmfb (1200 bytes)
    run one without Python: iree-run-module --device=local-task --module=out/f.b=8.vmfb --function=main --input=@ARG0.npy
    """
    from .signature_text import signature_text

    modules = sum(len(f.modules) for f in manifest.functions)
    t = manifest.target
    lines = [f"IREE modules {path} (format {manifest.format_version}, compiled by IREE {manifest.compiler}): "
             f"{_count(len(manifest.functions), 'function')}, {_count(modules, 'module')}"
             + (f", weights {_count(len(manifest.weights), 'array')} in {WEIGHTS_FILE}"
                if manifest.params_tree is not None else ""),
             f"compiled for {t}, {_count(len(t.required_features), 'CPU feature')} required; "
             f"asked for CPU {t.requested_cpu}, triple {t.requested_triple}"]
    for f in manifest.functions:
        reads = " (reads the weights)" if f.takes_params else ""
        lines.append(f"{f.name}{reads} {signature_text(f.signature, width=200)}")
        for m in f.modules:
            binding = ",".join(f"{k}={v}" for k, v in m.dims) or "static"
            lines.append(f"  {binding}: {m.file} ({manifest.files[m.file].size} bytes)")
    if manifest.examples:
        lines.append(examples_line(example_counts(manifest.examples)))
    first = manifest.functions[0]
    parameters = f" --parameters={PARAMETER_SCOPE}={path}/{WEIGHTS_FILE}" if first.takes_params else ""
    inputs = "".join(f" --input=@ARG{i}.npy" for i in range(len(first.signature.in_avals)))
    lines.append(f"run one without Python: iree-run-module --device=local-task --module={path}/"
                 f"{first.modules[0].file}{parameters} --function=main{inputs}")
    return "\n".join(lines)


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"
