"""What a bundle says about itself, for tools that do not run it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from .artifact import ArtifactRecord
from .artifact_info import ArtifactInfo, clip
from .bundle_manifest import Manifest, WeightRecord
from .producer import Producer
from .signature_text import NamedTree, parameters

#: The most characters of a key path in the weights' table (longer ones lose their middle).
_KEY_PATH_WIDTH = 80


@dataclass(frozen=True, slots=True)
class BundleFunctionInfo:
    """One function of a bundle: its name, whether it takes the weights, its artifact's summary."""

    name: str
    file: str
    takes_params: bool
    artifact: ArtifactInfo


@dataclass(frozen=True, slots=True)
class BundleInfo:
    """A summary of a bundle directory, read without JAX.

    Attributes:
        path: the directory.
        format_version: the manifest's format version.
        functions: each function's summary.
        weights: each weight's key path, dtype, shape (and stored form).
        metadata: the metadata given at save.
        producer: the versions that wrote the bundle, if its manifest says.
    """

    path: str
    format_version: int
    functions: tuple[BundleFunctionInfo, ...]
    weights: tuple[WeightRecord, ...]
    metadata: Mapping[str, Any] = field(default_factory=dict)
    producer: Producer | None = None

    @property
    def total_bytes(self) -> int:
        """The size of all weights in bytes."""
        return sum(w.nbytes for w in self.weights)

    @staticmethod
    def of(path: str, manifest: Manifest, artifacts: Mapping[str, ArtifactInfo]) -> BundleInfo:
        """The summary of a bundle from its manifest and its functions' summaries (by name)."""
        functions = tuple(BundleFunctionInfo(e.name, e.file, e.takes_params, artifacts[e.name])
                          for e in manifest.functions)
        return BundleInfo(path, manifest.format_version, functions, manifest.weights,
                          dict(manifest.metadata), manifest.producer)

    def weights_table(self) -> str:
        """The weights as a table: key path, dtype, shape, bytes; then the total."""
        rows = [("key path", "dtype", "shape", "bytes")]
        rows += [(_key_path_text(w.name), w.dtype, _shape_text(w.shape), str(w.nbytes))
                 for w in self.weights]
        rows.append(("total", "", _count(len(self.weights), "array"), str(self.total_bytes)))
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        return "\n".join(f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:<{widths[2]}}  "
                         f"{r[3]:>{widths[3]}}".rstrip() for r in rows)

    def __str__(self) -> str:
        lines = [f"bundle {self.path} (format {self.format_version}): {_count(len(self.functions), 'function')}, "
                 f"{_count(len(self.weights), 'weight')}, {self.total_bytes} bytes"]
        if self.producer is not None:
            lines.append(f"written by: {self.producer}")
        for f in self.functions:
            bound = "" if f.takes_params else " (takes no weights)"
            lines.append(f"{f.file}{bound}:")
            # A function written with the bundle says nothing the header has not said.
            artifact = replace(f.artifact, producer=None) if f.artifact.producer == self.producer else f.artifact
            lines.append("  " + str(artifact).replace("\n", "\n  "))
        lines.append("weights:")
        lines.append("  " + self.weights_table().replace("\n", "\n  "))
        if self.metadata:
            lines.append(clip(f"metadata: {dict(self.metadata)}"))
        return "\n".join(lines)


def weights_argument(record: ArtifactRecord) -> NamedTree | None:
    """The first positional argument of a function that takes a bundle's weights, as ``params``.

    None when the function has no positional argument or the argument holds no array.
    """
    args, _ = parameters(record)
    if not args:
        return None
    weights = args[0]
    count = weights.num_leaves
    if count == 0:
        return None
    return NamedTree("params", weights, tuple(str(a) for a in record.in_avals[:count]))


def _key_path_text(name: str) -> str:
    if not name:
        return "(root)"
    if len(name) <= _KEY_PATH_WIDTH:
        return name
    keep = (_KEY_PATH_WIDTH - 3) // 2
    return f"{name[:keep]}...{name[-keep:]}"


def _shape_text(shape: tuple[int, ...]) -> str:
    return f"({shape[0]},)" if len(shape) == 1 else "(" + ", ".join(map(str, shape)) + ")"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
