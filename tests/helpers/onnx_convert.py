"""Converting artifacts and bundles to ONNX files for the tests, until the converted-directory glue lands.

What the ``onnx`` target's converter will do, minus its manifest: read the
source with jaxport's own reader, keep the weights file as it is, and
write one ``FUNCTION.onnx`` per function whose weights are external data
pointing into it. The wire names of the inputs and outputs are the tests'
(``in0``, ``out0``, ...; a weight keeps its key path) until the converted-
directory issue fixes the rule.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import onnx

from jaxport.adapters.onnx.translate import external_tensors, translate
from jaxport.adapters.storage.opened_directory import DiskDirectories
from jaxport.application.conversion.source import read_source
from jaxport.domain.artifact.record import ArtifactRecord

WEIGHTS = "params.safetensors"


@dataclass(frozen=True)
class Converted:
    """One function converted: its file, its record, and how many leading inputs are weights."""

    path: Path
    record: ArtifactRecord
    nr_weights: int


def convert(source: Any, directory: Path, **options: Any) -> dict[str, Converted]:
    """Each function of ``source`` (an Exported, a Bundle or their path) as ``directory/NAME.onnx``."""
    src = read_source(source, DiskDirectories())
    directory.mkdir(parents=True, exist_ok=True)
    if src.write_weights is not None:
        with open(directory / WEIGHTS, "wb") as stream:
            src.write_weights(stream)
    converted = {}
    for function in src.functions:
        record = function.record
        names = [w.name for w in src.weights] if function.takes_params else []
        weights = external_tensors(src.weights_header, names, WEIGHTS) if names else []
        inputs = names + [f"in{i}" for i in range(len(record.in_avals) - len(names))]
        outputs = [f"out{j}" for j in range(len(record.out_avals))]
        model = translate(record, input_names=inputs, output_names=outputs, weights=weights,
                          metadata={"source": "tests"}, producer_version="test", **options)
        path = directory / f"{function.name}.onnx"
        onnx.save(model, str(path))
        converted[function.name] = Converted(path, record, len(names))
    return converted



def with_module(record: ArtifactRecord, text: str, **changes: Any) -> ArtifactRecord:
    """``record`` with its module replaced by the StableHLO ``text`` (and other ``changes``)."""
    from jax.extend import mlir as jex_mlir
    from jax.extend.mlir import ir
    from jax.interpreters import mlir

    with mlir.make_ir_context():
        module = ir.Module.parse(text)
        blob = bytes(jex_mlir.serialize_portable_artifact(module, "1.15.0", False))
    return dataclasses.replace(record, mlir_module_serialized=blob, **changes)
