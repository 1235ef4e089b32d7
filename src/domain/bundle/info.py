"""What a bundle says about itself, for tools that do not run it: its functions' summaries
(:class:`~jaxport.domain.artifact.info.ArtifactInfo`), its weights' table, its examples and generation spec."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from jaxport.domain.artifact.info import ArtifactInfo, clip, count
from jaxport.domain.artifact.producer import Producer
from jaxport.domain.generation.spec import GenerationSpec
from .manifest import Manifest, WeightRecord, example_counts, examples_line

#: The most characters of a key path in a bundle's weights' table (longer ones lose their middle).
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
        examples: the number of golden examples of each function that has some.
        generation: how the bundle generates tokens, if it does.
    """

    path: str
    format_version: int
    functions: tuple[BundleFunctionInfo, ...]
    weights: tuple[WeightRecord, ...]
    metadata: Mapping[str, Any] = field(default_factory=dict)
    producer: Producer | None = None
    examples: Mapping[str, int] = field(default_factory=dict)
    generation: GenerationSpec | None = None

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
                          dict(manifest.metadata), manifest.producer, example_counts(manifest.examples),
                          manifest.generation)

    def weights_table(self) -> str:
        """The weights as a table: key path, dtype, shape, bytes; then the total."""
        rows = [("key path", "dtype", "shape", "bytes")]
        rows += [(_key_path_text(w.name), w.dtype, str(w.shape), str(w.nbytes))
                 for w in self.weights]
        rows.append(("total", "", count(len(self.weights), "array"), str(self.total_bytes)))
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        return "\n".join(f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:<{widths[2]}}  "
                         f"{r[3]:>{widths[3]}}".rstrip() for r in rows)

    def __str__(self) -> str:
        lines = [f"bundle {self.path} (format {self.format_version}): {count(len(self.functions), 'function')}, "
                 f"{count(len(self.weights), 'weight')}, {self.total_bytes} bytes"]
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
        if self.examples:
            lines.append(examples_line(self.examples))
        if self.generation is not None:
            lines.extend(self.generation.lines())
        if self.metadata:
            lines.append(clip(f"metadata: {dict(self.metadata)}"))
        return "\n".join(lines)


def _key_path_text(name: str) -> str:
    if not name:
        return "(root)"
    if len(name) <= _KEY_PATH_WIDTH:
        return name
    keep = (_KEY_PATH_WIDTH - 3) // 2
    return f"{name[:keep]}...{name[-keep:]}"
