"""ONNX Runtime GenAI's files in an ONNX directory converted from a generative bundle.

Where the model fits GenAI's conventions (:mod:`jaxport.domain.generation.genai`),
the prefill's model is written again as ``genai_decoder.onnx`` with GenAI's
input and output names (its weights still read from the directory's weights
file: nothing is copied), beside a ``genai_config.json``; both are listed and
digested in the manifest like every other file. Where it does not fit, nothing
is written and the details say why.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import onnx

from jaxport.domain.calls.signature import Signature
from jaxport.domain.generation.spec import GenerationSpec
from jaxport.domain.generation.genai import DETAILS_KEY, GENAI_CONFIG, GENAI_MODEL, GenAIPlan, plan_genai

from .check import check_file
from .optimize import rename_values


def write_genai(staging: str, spec: GenerationSpec, prefill: Signature, model: onnx.ModelProto,
                written: set[str]) -> dict[str, Any]:
    """Writes GenAI's files for ``model`` (the prefill's, as written) when the model fits; returns the
    ``target_details`` entry that says what was written, or why nothing was. ``written``: the files
    the directory already has (a function named like GenAI's model file keeps its own)."""
    plan = plan_genai(spec, prefill)
    if isinstance(plan, str):
        return {DETAILS_KEY: {"unfit": plan}}
    if GENAI_MODEL in written:
        return {DETAILS_KEY: {"unfit": f"a function's model is already named {GENAI_MODEL}"}}
    renamed = _renamed(model, plan)
    path = Path(staging, GENAI_MODEL)
    onnx.save(renamed, str(path))
    check_file(path, spec.prefill)
    Path(staging, GENAI_CONFIG).write_text(json.dumps(plan.config, indent=2) + "\n", encoding="utf-8")
    return {DETAILS_KEY: {"config": GENAI_CONFIG, "model": GENAI_MODEL}}


def _renamed(model: onnx.ModelProto, plan: GenAIPlan) -> onnx.ModelProto:
    """A copy of ``model`` whose graph inputs and outputs carry GenAI's names (each use renamed too)."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    renames = plan.renames
    graph = copy.graph
    for value in (*graph.input, *graph.output):
        value.name = renames.get(value.name, value.name)
    rename_values(graph, renames)
    return copy

