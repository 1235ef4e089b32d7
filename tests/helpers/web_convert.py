"""Converted ONNX directories for the browser module's tests, until the ``onnx`` target is in the registry.

What ``jaxport.convert(source, path, to="onnx")`` will write, made from its
parts: jaxport's source reader, the ONNX translation (one ``FUNCTION.onnx``
per function, the weights as external data pointing into the bundle's
``params.safetensors``, kept byte for byte), the converted-directory
manifest of :mod:`jaxport.domain.converted` (each file's size and SHA-256),
the golden examples carried, and, with ``web=True``, the ES module
``jaxport.mjs`` listed like every other file.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import onnx

from jaxport.adapters.onnx_translate import external_tensors, translate
from jaxport.application.conversion_source import read_source
from jaxport.domain.bundle import EXAMPLES_FILE, FileDigest
from jaxport.domain.converted import MANIFEST_FILE, ConvertedFunction, ConvertedManifest, Signature, Variant, WeightsTable
from jaxport.adapters.web_module import copy_module
from jaxport.domain.runtime_calls import with_weights_bound
from jaxport.domain.web_boundary import check_web_signature

WEIGHTS = "params.safetensors"


def convert_onnx(source: Any, directory: Path, *, web: bool = True) -> ConvertedManifest:
    """``source`` (an Exported, a Bundle or their path) as a converted ONNX directory at ``directory``."""
    src = read_source(source)
    directory.mkdir(parents=True)
    weights = None
    if src.write_weights is not None and src.params_tree is not None:
        with open(directory / WEIGHTS, "wb") as stream:
            src.write_weights(stream)
        weights = WeightsTable(src.params_tree, src.weights, WEIGHTS, src.weights_header_sha256)
    functions = []
    for function in src.functions:
        record = function.record
        names = [w.name for w in src.weights] if function.takes_params else []
        caller = with_weights_bound(record, len(names)) if names else record
        sig = Signature(function.name, caller.in_tree, caller.in_avals, caller.out_tree, caller.out_avals,
                        caller.constraints, len(names))
        if web:
            check_web_signature(sig)
        model = translate(record, input_names=[*names, *sig.input_names], output_names=list(sig.output_names),
                          weights=external_tensors(src.weights_header, names, WEIGHTS) if names else [],
                          metadata={"producer": "jaxport tests"}, producer_version="tests")
        onnx.save(model, str(directory / f"{function.name}.onnx"))
        functions.append(ConvertedFunction(sig, (Variant(f"{function.name}.onnx"),)))
    if src.examples:
        (directory / EXAMPLES_FILE).write_bytes(src.examples_blob)
    if web:
        copy_module(directory)
    files = {p.name: FileDigest(p.stat().st_size, hashlib.sha256(p.read_bytes()).hexdigest())
             for p in sorted(directory.iterdir())}
    manifest = ConvertedManifest("onnx", {"opset": 21, "ir_version": 10}, tuple(functions), weights,
                                 src.examples, EXAMPLES_FILE if src.examples else "", files)
    (directory / MANIFEST_FILE).write_bytes(manifest.to_json())
    return manifest
