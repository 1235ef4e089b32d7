"""ONNX models checked in onnxruntime-web under Node, many in one Node process.

A test that ran an ONNX model on ONNX Runtime (Python) adds it here with
its inputs and the outputs it expects; :meth:`WebBatch.run` runs every case
added in one ``node tests/web/run_onnx.mjs`` (onnxruntime-web 1.30.0 on
WebAssembly, the package.json's), and returns the cases whose outputs
differ: another shape or dtype, integers and booleans not equal, floats
outside jaxport's numerics tolerance of their dtype.

>>> batch = WebBatch(tmp / "web")                                          # doctest: +SKIP
>>> batch.add("relu", model.SerializeToString(), {"in0": x}, {"out0": y})   # doctest: +SKIP
>>> assert not batch.run()                                                 # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np
import onnx

from .web_paths import ROOT

SCRIPT = ROOT / "tests" / "web" / "run_onnx.mjs"
_CODES = {"bool": "BOOL", "int8": "I8", "int16": "I16", "int32": "I32", "int64": "I64", "uint8": "U8",
          "uint16": "U16", "uint32": "U32", "uint64": "U64", "float16": "F16", "float32": "F32", "float64": "F64"}


def node_ready() -> str | None:
    """Why onnxruntime-web cannot run here (no Node, the npm packages not installed), or None."""
    if shutil.which("node") is None:
        return "node is not installed: make web-deps installs Node.js and the npm packages"
    if not (ROOT / "node_modules" / "onnxruntime-web").is_dir():
        return "the npm packages of package.json are not installed: run make web-deps (npm ci)"
    return None


def write_safetensors(path: Path, arrays: Mapping[str, np.ndarray]) -> None:
    """A safetensors file of ``arrays`` (C order, little-endian)."""
    header: dict[str, object] = {}
    blobs = []
    offset = 0
    for name, array in arrays.items():
        data = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": _CODES[array.dtype.name], "shape": list(array.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(len(text).to_bytes(8, "little") + text + b"".join(blobs))


def _web_dtype(array: np.ndarray) -> np.ndarray:
    array = np.asarray(array)
    return array.astype(np.float32) if array.dtype.name == "bfloat16" else array


def module_batch(batches: list[WebBatch], directory: Path) -> Iterator[None]:
    """The body of a module-scoped fixture: while the module's tests run, ``batches`` holds one batch that
    they add their models to (none where Node or the npm packages are missing: tests/e2e/test_web.py says
    so); at the module's end every case runs in one Node process, and any difference fails the module."""
    if node_ready() is not None:
        yield
        return
    batches.append(WebBatch(directory))
    yield
    batch = batches.pop()
    failures = batch.run()
    assert not failures, f"onnxruntime-web differs from ONNX Runtime's expected values in {len(failures)} of " \
                         f"{batch.count} cases:\n" + "\n".join(failures)


class WebBatch:
    """ONNX models to check in onnxruntime-web, written under ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.count = 0

    def add(self, name: str, model: bytes, inputs: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray],
            external: Mapping[str, Path] | None = None, tolerance: tuple[float, float] | None = None) -> None:
        """One case: the model's bytes, its inputs and expected outputs by name, its external-data files
        (location in the model -> file); with ``tolerance`` (rtol, atol) floats are compared element by
        element as ``np.testing.assert_allclose`` does (NaN equal to NaN), else by jaxport's numerics
        check of the dtype. Integers and booleans are always compared exactly."""
        case = self.directory / f"{self.count:04d}"
        self.count += 1
        case.mkdir(parents=True)
        (case / "model.onnx").write_bytes(model)
        write_safetensors(case / "io.safetensors", {**{f"in/{k}": np.asarray(v) for k, v in inputs.items()},
                                                    **{f"out/{k}": np.asarray(v) for k, v in expected.items()}})
        (case / "case.json").write_text(json.dumps({"name": name, "external": {k: str(v) for k, v in (external or {}).items()},
                                                   "tolerance": list(tolerance) if tolerance else None}))

    def add_file(self, name: str, path: Path, args: Sequence[np.ndarray], expected: Sequence[np.ndarray],
                 tolerance: tuple[float, float] | None = None) -> None:
        """One case from an ONNX file (its external data beside it), fed ``args`` in the order of the graph's
        inputs and expecting ``expected`` in the order of its outputs. A bfloat16 port is float32 in the graph
        (the ONNX target's rule, converted by jaxport's Python runtime): fed and compared as float32 here."""
        model = onnx.load(str(path), load_external_data=False)
        external = {entry.value: path.parent / entry.value for tensor in model.graph.initializer
                    if tensor.data_location == onnx.TensorProto.EXTERNAL
                    for entry in tensor.external_data if entry.key == "location"}
        inputs = [i.name for i in model.graph.input]
        outputs = [o.name for o in model.graph.output]
        assert len(inputs) == len(args) and len(outputs) == len(expected), (name, inputs, outputs)
        self.add(name, path.read_bytes(), {n: _web_dtype(a) for n, a in zip(inputs, args)},
                 {n: _web_dtype(w) for n, w in zip(outputs, expected)}, external, tolerance)

    def run(self, env: Mapping[str, str] | None = None, timeout: float = 300) -> list[str]:
        """Runs every case; returns one line per case that failed (its name and why)."""
        if not self.count:
            return []
        run = subprocess.run(["node", str(SCRIPT), str(self.directory)], cwd=ROOT, env=dict(env or os.environ),
                             capture_output=True, text=True, timeout=timeout)
        if run.returncode not in (0, 1):
            return [f"node failed ({run.returncode}): {run.stderr[-3000:]}"]
        results = json.loads(run.stdout.strip().splitlines()[-1])
        assert len(results) == self.count, results
        return [f"{r['name']}: {r['problem']}" for r in results if r["problem"] is not None]
