"""What a path holds, recognised before anything reads it: an artifact, a bundle, a converted directory, a model
file of another runtime, NumPy arrays, or a directory that jaxport did not write.

A file is recognised by its first bytes (:data:`HEAD_BYTES` of them), a directory by the ``format`` its manifest
names; the storage adapter (:mod:`jaxport.adapters.storage.path_kind`) reads them. Every entry point that takes
a path (``load``, ``load_bundle``, ``load_converted``, ``inspect``, ``jaxport run``, ``jaxport serve``) asks
first, so that the wrong one says what the path is and what reads it (:func:`require`) instead of failing
deep inside a reader ("table Exported at offset 118622728 lies past the end of the 8263-byte buffer").

A file that is none of the foreign formats is taken for an artifact when its first four bytes could be the
offset of a flatbuffer's root table (the artifact's reader then says precisely what else is wrong with it),
else for a file of no format that jaxport knows.

>>> file_kind(b"\\x08\\x0a\\x12\\x07jaxport", 8263)
<PathKind.ONNX: 'an ONNX model'>
>>> file_kind(b"\\x1c\\x00\\x00\\x00TFL3", 1200)
<PathKind.TFLITE: 'a LiteRT model (.tflite)'>
>>> file_kind(b"\\x93NUMPY\\x01\\x00", 160)
<PathKind.NUMPY: 'NumPy arrays (.npy)'>
>>> directory_kind(["jaxport-bundle"])
<PathKind.BUNDLE: 'a bundle'>
"""

from __future__ import annotations

import enum
import os
from collections.abc import Iterable

from jaxport.domain.bundle.manifest import FORMAT_NAME as BUNDLE_FORMAT
from jaxport.domain.errors import ArtifactError

#: How many first bytes of a file :func:`file_kind` reads.
HEAD_BYTES = 64
#: The formats a converted directory's manifest names: today's, then those before one format served every target.
CONVERTED_FORMATS = ("jaxport-converted", "jaxport-iree", "jaxport-savedmodel")


class PathKind(enum.Enum):
    """What a path holds; the value says it in a message."""

    MISSING = "missing (nothing is there)"
    ARTIFACT = "an artifact file"
    OTHER = "a file of no format that jaxport reads"
    BUNDLE = "a bundle"
    CONVERTED = "a directory that jaxport converted"
    ONNX = "an ONNX model"
    TFLITE = "a LiteRT model (.tflite)"
    VMFB = "an IREE module (.vmfb)"
    NUMPY = "NumPy arrays (.npy)"
    NUMPY_ZIP = "NumPy arrays (.npz)"
    DIRECTORY = "a directory that jaxport did not write (no manifest of a bundle or of a converted directory)"


#: What reads each kind, for the message of the wrong reader.
_READER = {
    PathKind.ARTIFACT: "load it with jaxport.load (jaxport run, inspect and check take it too)",
    PathKind.BUNDLE: "load it with jaxport.load_bundle (jaxport run, inspect, check and serve take it too)",
    PathKind.CONVERTED: "load it with jaxport.load_converted (jaxport run, inspect, check and serve take it too)",
    PathKind.NUMPY: "arrays are a call's inputs: jaxport run PATH --input FILE",
    PathKind.NUMPY_ZIP: "arrays are a call's inputs: jaxport run PATH --input FILE",
    PathKind.DIRECTORY: "give a bundle (jaxport.save_bundle) or a directory that jaxport convert wrote",
    PathKind.OTHER: "give an artifact (jaxport.save), a bundle or a directory that jaxport convert wrote",
}
_MODEL_FILE = ("jaxport reads the directory that jaxport convert wrote around it (jaxport.load_converted, "
               "jaxport run DIR), not a model file alone")


def file_kind(head: bytes, size: int) -> PathKind:
    """The kind of a file of ``size`` bytes that begins with ``head`` (its first :data:`HEAD_BYTES` bytes).

    An ONNX model is a protocol buffer that starts with its IR version (field 1, a small varint) and another
    field of ``ModelProto``; read as a flatbuffer, it would put the artifact's root table megabytes away,
    where no artifact has it. A ``.tflite`` and an older ``.vmfb`` carry their flatbuffer identifier;
    today's ``.vmfb`` is a zip archive whose first member is ``module.fb``, an ``.npz`` one of ``.npy`` members.

    >>> file_kind(b"PK\\x03\\x04" + bytes(22) + b"\\x09\\x00\\x00\\x00module.fb", 12445)
    <PathKind.VMFB: 'an IREE module (.vmfb)'>
    >>> file_kind(b"\\x10\\x00\\x00\\x00garbage" * 5, 55)
    <PathKind.ARTIFACT: 'an artifact file'>
    >>> file_kind(b"hello, world", 12)
    <PathKind.OTHER: 'a file of no format that jaxport reads'>
    """
    if head[:6] == b"\x93NUMPY":
        return PathKind.NUMPY
    if head[4:8] == b"TFL3":
        return PathKind.TFLITE
    if head[4:8] == b"IREE":
        return PathKind.VMFB
    if head[:4] == b"PK\x03\x04" and len(head) >= 30:
        name = head[30:30 + int.from_bytes(head[26:28], "little")]
        if name == b"module.fb":
            return PathKind.VMFB
        if name.endswith(b".npy"):
            return PathKind.NUMPY_ZIP
    if len(head) >= 3 and head[0] == 0x08 and 1 <= head[1] <= 0x7F and head[2] in _MODEL_PROTO_TAGS:
        return PathKind.ONNX
    root = int.from_bytes(head[:4], "little")
    return PathKind.ARTIFACT if len(head) >= 4 and 4 <= root < size else PathKind.OTHER


#: The tags (field number and wire type) of ``ModelProto``'s fields after ``ir_version``: producer name and
#: version, domain, model version, doc string, graph, opset imports, metadata, training info, functions.
_MODEL_PROTO_TAGS = frozenset({0x12, 0x1A, 0x22, 0x28, 0x32, 0x3A, 0x42, 0x72, 0xA2, 0xCA})


def directory_kind(formats: Iterable[str | None]) -> PathKind:
    """The kind of a directory whose candidate manifests name ``formats`` (None: absent, or names none)."""
    named = set(formats)
    if BUNDLE_FORMAT in named:
        return PathKind.BUNDLE
    if named & set(CONVERTED_FORMATS):
        return PathKind.CONVERTED
    return PathKind.DIRECTORY


def require(kind: PathKind, path: str | os.PathLike[str], *wanted: PathKind) -> None:
    """Nothing when ``kind`` is one of ``wanted``, or one whose reader says best what is wrong (nothing there; a
    file that is no other format, where an artifact is wanted; a directory without a manifest, where a
    directory is); else raises.

    >>> require(PathKind.BUNDLE, "model", PathKind.ARTIFACT)
    Traceback (most recent call last):
    ...
    jaxport.errors.ArtifactError: model is a bundle, not an artifact file: load it with jaxport.load_bundle (jaxport run, inspect, check and serve take it too)

    Raises:
        ArtifactError: ``path`` holds another kind; the message says which, and what reads it.
    """
    if kind in wanted or kind is PathKind.MISSING:
        return
    if (kind is PathKind.OTHER and PathKind.ARTIFACT in wanted) or \
            (kind is PathKind.DIRECTORY and {PathKind.BUNDLE, PathKind.CONVERTED} & set(wanted)):
        return
    expected = " or ".join(filter(None, [", ".join(w.value for w in wanted[:-1]), wanted[-1].value]))
    raise ArtifactError(f"{os.fspath(path)} is {kind.value}, not {expected}: {_READER.get(kind, _MODEL_FILE)}")
