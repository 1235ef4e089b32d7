"""The jaxport manifest of a SavedModel: what jaxport wrote, readable without TensorFlow.

A SavedModel that jaxport writes keeps, in ``assets.extra/jaxport/`` (a
folder TensorFlow Serving leaves alone), ``manifest.json`` and each
function's artifact (``NAME.jaxport``, the bytes ``jaxport.save`` writes).
The manifest lists the signatures (the artifact's file, how many leading
inputs the weights' variables give, the names, dtypes and shapes of the
inputs and outputs), the default signature, the weights (key path, dtype,
shape) and the size and SHA-256 of every file of the directory, so that
``jaxport inspect`` describes the SavedModel and ``jaxport run`` checks a
call with jaxport's domain code, neither importing TensorFlow.

Format versions (``format_version``): 1, the first.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .bundle_manifest import SAFETENSORS_DTYPES, FileDigest, WeightRecord
from .errors import ArtifactError
from .savedmodel_plan import SavedModelPlan, TensorPlan

FORMAT_NAME = "jaxport-savedmodel"
FORMAT_VERSION = 1
#: Where jaxport's files go, relative to the SavedModel directory.
JAXPORT_DIR = "assets.extra/jaxport"
MANIFEST_PATH = f"{JAXPORT_DIR}/manifest.json"


@dataclass(frozen=True, slots=True)
class SignatureEntry:
    """One signature: its artifact file, its weights count and its tensors."""

    name: str
    file: str
    weights: int
    inputs: tuple[TensorPlan, ...]
    outputs: tuple[TensorPlan, ...]


@dataclass(frozen=True)
class SavedModelManifest:
    """Everything ``assets.extra/jaxport/manifest.json`` says."""

    signatures: tuple[SignatureEntry, ...]
    default: str | None
    weights: tuple[WeightRecord, ...]
    files: Mapping[str, FileDigest] = field(default_factory=dict)
    format_version: int = FORMAT_VERSION

    @staticmethod
    def of(plan: SavedModelPlan, files: Mapping[str, FileDigest]) -> SavedModelManifest:
        """The manifest of a plan, with the digests of the files written for it."""
        signatures = tuple(SignatureEntry(f.name, artifact_file(f.name), f.weights, f.inputs, f.outputs)
                           for f in plan.functions)
        return SavedModelManifest(signatures, plan.default, plan.weights, dict(files))

    def signature(self, name: str) -> SignatureEntry:
        """The signature ``name``.

        Raises:
            KeyError: there is none (the message lists those there are).
        """
        for entry in self.signatures:
            if entry.name == name:
                return entry
        raise KeyError(f"The SavedModel has no function {name!r}; it has {[s.name for s in self.signatures]}")

    @property
    def total_weight_bytes(self) -> int:
        """The stored size of all weights."""
        return sum(w.nbytes for w in self.weights)

    def to_json(self) -> bytes:
        """The manifest as indented UTF-8 JSON."""
        doc = {
            "format": FORMAT_NAME, "format_version": self.format_version, "default": self.default,
            "signatures": {s.name: {"file": s.file, "weights": s.weights,
                                    "inputs": [_tensor_json(t) for t in s.inputs],
                                    "outputs": [_tensor_json(t) for t in s.outputs]}
                           for s in self.signatures},
            "weights": [{"key_path": w.name, "dtype": w.dtype, "shape": list(w.shape),
                         "stored_dtype": w.data_dtype, "stored_shape": list(w.data_shape)}
                        for w in self.weights],
            "files": {name: {"size": d.size, "sha256": d.sha256} for name, d in sorted(self.files.items())},
        }
        return (json.dumps(doc, indent=1) + "\n").encode("utf-8")

    @staticmethod
    def from_json(data: bytes) -> SavedModelManifest:
        """The manifest that ``data`` holds.

        Raises:
            ArtifactError: it is not such a manifest, or of a newer format version.
        """
        try:
            doc = json.loads(data.decode("utf-8"))
            if doc["format"] != FORMAT_NAME:
                raise ArtifactError(f"{MANIFEST_PATH}: 'format' is not {FORMAT_NAME!r}")
            version = doc["format_version"]
            if not isinstance(version, int) or version > FORMAT_VERSION:
                raise ArtifactError(f"{MANIFEST_PATH}: format version {version!r} is newer than the "
                                    f"newest this jaxport reads ({FORMAT_VERSION}); upgrade jaxport")
            signatures = tuple(
                SignatureEntry(name, _str(s["file"]), _int(s["weights"]),
                               tuple(_tensor(t) for t in s["inputs"]), tuple(_tensor(t) for t in s["outputs"]))
                for name, s in doc["signatures"].items())
            weights = tuple(_weight(w) for w in doc["weights"])
            files = {_str(name): FileDigest(_int(d["size"]), _str(d["sha256"])) for name, d in doc["files"].items()}
            default = doc["default"]
            if default is not None and default not in {s.name for s in signatures}:
                raise ArtifactError(f"{MANIFEST_PATH}: the default {default!r} is not a signature")
            return SavedModelManifest(signatures, default, weights, files, version)
        except ArtifactError:
            raise
        except (UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ArtifactError(f"{MANIFEST_PATH} is not a jaxport SavedModel manifest: "
                                f"{type(exc).__name__}: {exc}") from exc


def artifact_file(signature: str) -> str:
    """The artifact file of a signature, relative to the SavedModel directory."""
    return f"{JAXPORT_DIR}/{signature}.jaxport"


def _tensor_json(t: TensorPlan) -> dict[str, Any]:
    return {"name": t.name, "dtype": t.dtype, "shape": list(t.shape)}


def _tensor(doc: Any) -> TensorPlan:
    shape = doc["shape"]
    if not all(d is None or (isinstance(d, int) and not isinstance(d, bool)) for d in shape):
        raise TypeError(f"a shape holds something other than sizes and nulls: {shape}")
    return TensorPlan(_str(doc["name"]), _str(doc["dtype"]), tuple(shape))


def _weight(doc: Any) -> WeightRecord:
    stored = _str(doc["stored_dtype"])
    if stored not in SAFETENSORS_DTYPES:
        raise TypeError(f"the stored dtype {stored!r} is not one a bundle stores")
    return WeightRecord(_str(doc["key_path"]), _str(doc["dtype"]), _sizes(doc["shape"]), stored,
                        _sizes(doc["stored_shape"]))


def _sizes(value: Any) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(isinstance(d, int) and d >= 0 for d in value):
        raise TypeError(f"not a list of sizes: {value!r}")
    return tuple(value)


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{value!r} is not a string")
    return value


def _int(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{value!r} is not an integer")
    return value
