"""A checked directory: a manifest that lists every file with its size and SHA-256, and its checks.

A bundle (:mod:`jaxport.domain.bundle.manifest`) and a converted directory
(:mod:`jaxport.domain.converted.manifest`) are both one: their manifests
differ in what they say of the functions, and share what this module holds:

* :class:`FileDigest` and the ``files`` table (path relative to the
  directory's root, ``/``-separated -> size and digest);
* the JSON helpers: :class:`JsonReader` (typed access whose errors say
  where), :func:`load_json` and :func:`dump_json`, and a pytree structure's
  JSON (:func:`tree_to_json`, :func:`tree_from_json`);
* the checks of a directory against its manifest: :func:`check_listing` (what
  the directory holds: exactly the listed files, each a regular file of the
  recorded size), :func:`check_size` and :func:`check_digest`. ``owner``
  names the directory in messages (``"bundle"``, ``"directory"``).

Nothing here opens a file: the storage adapter
(:mod:`jaxport.adapters.storage.checked_directory`) lists the directory and
hashes its files, and passes what it found.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from jaxport.domain.artifact.record import TreeKind, TreeSpec
from jaxport.domain.errors import ArtifactError

MANIFEST_FILE: Final = "manifest.json"
#: A listing's size of what is not a regular file (a link, a device, a pipe).
NOT_A_FILE: Final = -1
#: A listing's size of a folder (its files are listed by their own paths).
FOLDER: Final = -2


@dataclass(frozen=True, slots=True)
class FileDigest:
    """The size and SHA-256 digest (hex) of one file of a checked directory."""

    size: int
    sha256: str


def files_to_json(files: Mapping[str, FileDigest]) -> dict[str, Any]:
    """The ``files`` table as JSON, by path."""
    return {name: {"size": d.size, "sha256": d.sha256} for name, d in sorted(files.items())}


def files_from_json(r: JsonReader) -> dict[str, FileDigest]:
    """The table :func:`files_to_json` wrote.

    Raises:
        ArtifactError: naming where, when a size or a digest is missing or of the wrong type.
    """
    return {name: FileDigest(d.get("size", int), d.get("sha256", str)) for name, d in r.items()}


def load_json(data: bytes) -> Any:
    """The JSON value of a manifest's bytes.

    Raises:
        ArtifactError: naming ``manifest.json``, when it is not UTF-8 JSON or nests too deeply.
    """
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ArtifactError(f"{MANIFEST_FILE} is not valid JSON: {exc}") from exc
    except RecursionError:
        raise ArtifactError(f"{MANIFEST_FILE} nests its values too deeply") from None


def dump_json(doc: Mapping[str, Any]) -> bytes:
    """A manifest's bytes: ``doc`` as indented UTF-8 JSON and a newline."""
    return (json.dumps(doc, indent=1, allow_nan=False) + "\n").encode("utf-8")


def tree_to_json(spec: TreeSpec) -> dict[str, Any]:
    """A pytree structure as JSON: ``{"kind": "dict", "keys": [...], "children": [...]}``."""
    doc: dict[str, Any] = {"kind": spec.kind.value}
    if spec.children:
        doc["children"] = [tree_to_json(c) for c in spec.children]
    if spec.kind is TreeKind.DICT:
        doc["keys"] = list(spec.children_names)
    if spec.kind is TreeKind.CUSTOM:
        doc["name"] = spec.custom_name
        doc["auxdata"] = base64.b64encode(spec.custom_auxdata).decode("ascii")
    return doc


def tree_from_json(doc: dict[str, Any], where: str) -> TreeSpec:
    """The structure :func:`tree_to_json` wrote.

    Raises:
        ArtifactError: naming ``where``, when ``doc`` is not such a structure.
    """
    r = JsonReader(doc, where)
    try:
        kind = TreeKind(r.get("kind", str))
        children = tuple(tree_from_json(c.doc, where) for c in r.child_list("children")) \
            if "children" in doc else ()
        keys = tuple(r.get("keys", list)) if kind is TreeKind.DICT else ()
        if not all(isinstance(k, str) for k in keys):
            raise ArtifactError(f"{where}: a dict key is not a string")
        if kind is TreeKind.CUSTOM:
            auxdata = base64.b64decode(r.get("auxdata", str), validate=True)
            return TreeSpec(kind, children, custom_name=r.get("name", str), custom_auxdata=auxdata)
        return TreeSpec(kind, children, keys)
    except (ValueError, TypeError) as exc:
        if isinstance(exc, ArtifactError):
            raise
        raise ArtifactError(f"{where}: not a pytree structure: {exc}") from exc


class JsonReader:
    """Typed access to one JSON object, with errors that say where.

    Args:
        doc: the value read.
        where: what it is, for messages (``"manifest.json: params"``).

    Raises:
        ArtifactError: ``doc`` is not a JSON object.
    """

    def __init__(self, doc: Any, where: str) -> None:
        if not isinstance(doc, dict):
            raise ArtifactError(f"{where}: expected a JSON object, found {type(doc).__name__}")
        self.doc: dict[str, Any] = doc
        self.where = where

    def get(self, key: str, kind: type[Any]) -> Any:
        """The field ``key``, which must be a ``kind`` (a bool is no int)."""
        value = self.doc.get(key)
        if value is None or not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ArtifactError(f"{self.where}: the field '{key}' is missing or not a {kind.__name__}")
        return value

    def optional(self, key: str, kind: type[Any]) -> Any:
        """The field ``key``, which must be a ``kind`` where present; None where absent (or null)."""
        return None if self.doc.get(key) is None else self.get(key, kind)

    def child(self, key: str) -> JsonReader:
        """The object in the field ``key``."""
        return JsonReader(self.get(key, dict), f"{self.where}: {key}")

    def child_list(self, key: str) -> list[JsonReader]:
        """The objects in the list in the field ``key``."""
        return [JsonReader(v, f"{self.where}: {key}[{i}]") for i, v in enumerate(self.get(key, list))]

    def items(self) -> list[tuple[str, JsonReader]]:
        """Each field's name and object."""
        return [(k, JsonReader(v, f"{self.where}.{k}")) for k, v in self.doc.items()]

    def shape(self, key: str) -> tuple[int, ...]:
        """The list of sizes in the field ``key``."""
        dims = self.get(key, list)
        if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in dims):
            raise ArtifactError(f"{self.where}: '{key}' is not a list of sizes: {dims}")
        return tuple(dims)


def check_listing(files: Mapping[str, FileDigest], entries: Mapping[str, int], manifest_path: str,
                  owner: str, *, folders: bool) -> None:
    """Checks what a directory holds against its manifest's ``files``.

    Args:
        files: the manifest's table.
        entries: everything under the directory's root by relative path: a
            regular file's size, :data:`NOT_A_FILE` or :data:`FOLDER`.
        manifest_path: the manifest's own path (it lists no digest of itself).
        owner: the directory, in messages.
        folders: whether the directory may have folders (a converted
            directory's ``variables/``); a bundle's files lie at its root.

    Raises:
        ArtifactError: a file is missing, extra, not a regular file, truncated
            or longer than recorded.
    """
    for name in sorted(set(entries) - set(files) - {manifest_path}):
        size = entries[name]
        if size == FOLDER and folders:
            continue
        if size < 0:
            raise ArtifactError(f"The {owner} holds {name}, which is not a regular file")
        raise ArtifactError(f"The {owner} holds a file that its manifest does not list: {name}")
    for name, digest in sorted(files.items()):
        found = entries.get(name)
        if found is None:
            raise ArtifactError(f"The {owner}'s file {name} is missing")
        if found < 0:
            raise ArtifactError(f"The {owner}'s {name} is not a regular file")
        check_size(name, digest, found, owner)


def check_size(file: str, expected: FileDigest, size: int, owner: str) -> None:
    """Checks a file's size against the manifest (before reading it).

    Raises:
        ArtifactError: the file is truncated or longer than recorded.
    """
    if size != expected.size:
        what = "truncated" if size < expected.size else "longer than recorded"
        raise ArtifactError(f"The {owner}'s file {file} is {what}: {size} bytes where the "
                            f"manifest records {expected.size}")


def check_digest(file: str, expected: FileDigest, sha256: str, owner: str) -> None:
    """Checks a file's SHA-256 digest (hex) against the manifest, before anything reads it.

    Raises:
        ArtifactError: the digests differ: the file was damaged or changed after jaxport wrote it.
    """
    if sha256 != expected.sha256:
        raise ArtifactError(f"The digest of the {owner}'s file {file} does not match its manifest: "
                            f"sha256 {sha256} where {expected.sha256} was recorded; the file was "
                            "damaged or changed after jaxport wrote it")


def manifest_format(data: bytes) -> str | None:
    """The ``format`` that a ``manifest.json`` names (``"jaxport-converted"``), None when it names none."""
    try:
        doc = load_json(data)
    except ArtifactError:
        return None
    value = doc.get("format") if isinstance(doc, dict) else None
    return value if isinstance(value, str) else None
