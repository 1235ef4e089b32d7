"""What a SavedModel that jaxport wrote says about itself, for ``jaxport inspect`` (no TensorFlow)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .artifact import ArtifactRecord
from .artifact_info import ArtifactInfo
from .savedmodel_manifest import SavedModelManifest
from .savedmodel_plan import TensorPlan


@dataclass(frozen=True, slots=True)
class SavedModelInfo:
    """A summary of a SavedModel directory that jaxport wrote.

    Attributes:
        path: the directory.
        signatures: each signature's inputs and outputs, as ``name: dtype[shape]`` texts.
        default: the function ``serving_default`` calls, if any.
        functions: each signature's artifact summary.
        weights: the number of weights (variables).
        weight_bytes: their stored size.
        graph_bytes: the size of ``saved_model.pb``.
    """

    path: str
    signatures: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]]
    default: str | None
    functions: Mapping[str, ArtifactInfo]
    weights: int
    weight_bytes: int
    graph_bytes: int

    @staticmethod
    def of(path: str, manifest: SavedModelManifest, records: Mapping[str, ArtifactRecord]) -> SavedModelInfo:
        """The summary of the SavedModel at ``path`` from its manifest and its functions' records."""
        graph = manifest.files.get("saved_model.pb")
        return SavedModelInfo(
            path, {s.name: (tuple(_tensor(t) for t in s.inputs), tuple(_tensor(t) for t in s.outputs))
                   for s in manifest.signatures},
            manifest.default, {name: ArtifactInfo.of(r) for name, r in records.items()},
            len(manifest.weights), manifest.total_weight_bytes, graph.size if graph is not None else 0)

    def __str__(self) -> str:
        lines = [f"{self.path}: a TensorFlow SavedModel written by jaxport, {len(self.signatures)} "
                 f"signature{'' if len(self.signatures) == 1 else 's'}, {self.weights} weights as variables "
                 f"({self.weight_bytes} bytes), saved_model.pb {self.graph_bytes} bytes"]
        for name, (inputs, outputs) in self.signatures.items():
            alias = " (serving_default)" if name == self.default and name != "serving_default" else ""
            info = self.functions[name]
            lines.append(f"  signature {name}{alias}: platforms {', '.join(info.platforms)}"
                         f"{', with gradients' if info.has_vjp else ''}")
            lines.append(f"    inputs:  {', '.join(inputs) or '(none)'}")
            lines.append(f"    outputs: {', '.join(outputs) or '(none)'}")
        return "\n".join(lines)


def _tensor(t: TensorPlan) -> str:
    dims = ",".join("?" if d is None else str(d) for d in t.shape)
    return f"{t.name}: {t.dtype}[{dims}]"
