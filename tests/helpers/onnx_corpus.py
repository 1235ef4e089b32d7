"""The operation corpus of the ONNX translation: cases, how each is converted, run and compared.

A case is a small function producing one family of operations (and an edge
of its semantics), the input specs it is exported with (static or with
symbolic dimensions) and one or more concrete argument sets. A case either
matches ``jax.jit`` of its function on every argument set (integers and
booleans exactly, floats within the dtype's tolerance) or names the
operation it is refused for.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import numpy as np
import onnx

import jaxport
from jaxport.adapters.onnx.translate import translate
from .web_batch import WebBatch

#: Relative and absolute tolerance by dtype name.
TOLERANCES = {"float64": 1e-9, "float32": 1e-4, "float16": 1e-2, "bfloat16": 4e-2}


@dataclass(frozen=True)
class Case:
    """One corpus case; ``refused`` names the operation it is refused for, if it is."""

    name: str
    function: Callable[..., Any]
    specs: Sequence[jax.ShapeDtypeStruct]
    args: Sequence[Sequence[np.ndarray]]
    refused: str | None = None
    tolerance: float | None = field(default=None)


def spec(shape: Sequence[Any], dtype: Any = np.float32) -> jax.ShapeDtypeStruct:
    """A ShapeDtypeStruct."""
    return jax.ShapeDtypeStruct(tuple(shape), dtype)


def to_onnx(case: Case, max_opset: int | None = None) -> onnx.ModelProto:
    """The case's function exported with its specs and translated (inputs ``in0``..., outputs ``out0``...),
    at opset 21 or, where an operation needs it, up to ``max_opset`` (by default 21)."""
    record = jaxport.export(jax.jit(case.function))(*case.specs).record
    return translate(record, input_names=[f"in{i}" for i in range(len(record.in_avals))],
                     output_names=[f"out{j}" for j in range(len(record.out_avals))], max_opset=max_opset)


def expected(case: Case) -> list[list[np.ndarray]]:
    """``jax.jit`` of the case's function on each argument set, flat."""
    jitted = jax.jit(case.function)
    return [[np.asarray(w) for w in jax.tree.leaves(jitted(*args))] for args in case.args]


def save(model: onnx.ModelProto, directory: Path, name: str) -> Path:
    """The model written as ``directory/name.onnx``."""
    path = directory / f"{name}.onnx"
    onnx.save(model, str(path))
    return path


def assert_close(got: Sequence[np.ndarray], want: Sequence[np.ndarray], tolerance: float | None = None) -> None:
    """Same shapes and dtypes; integers and booleans equal, floats within the dtype's tolerance."""
    assert [g.shape for g in got] == [w.shape for w in want]
    assert [str(g.dtype) for g in got] == [str(w.dtype) for w in want]
    for g, w in zip(got, want):
        if w.dtype.kind == "f" or str(w.dtype) == "bfloat16":
            tol = tolerance if tolerance is not None else TOLERANCES[str(w.dtype)]
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=tol, atol=tol)
        else:
            np.testing.assert_array_equal(g, w)


def check_case(case: Case, directory: Path, model_of: Callable[[Case], onnx.ModelProto] = to_onnx,
               web: Sequence[WebBatch] = (), location: str | None = None) -> None:
    """``case`` converted by ``model_of`` and run by ONNX Runtime equals ``jax.jit`` on each argument set, or
    is refused naming ``case.refused`` (at a source ``location`` containing ``location``); with a ``web``
    batch each argument set without empty arrays also runs in onnxruntime-web at the module's end."""
    from jaxport.adapters.onnx.runtime import OnnxRuntimeModel
    from jaxport.errors import UnsupportedOperationError

    try:
        model = model_of(case)
    except UnsupportedOperationError as exc:
        assert case.refused is not None, f"{case.name}: refused {exc}"
        assert exc.operation == case.refused, str(exc)
        assert location is None or location in exc.location, exc.location
        return
    assert case.refused is None, f"{case.name}: converted, but the table says {case.refused} is refused"
    path = save(model, directory, "case")
    runtime = OnnxRuntimeModel(path, threads=1)
    for i, (args, want) in enumerate(zip(case.args, expected(case))):
        if web and all(np.asarray(a).size for a in args):
            tol = case.tolerance or max((TOLERANCES.get(str(w.dtype), 0.0) for w in want), default=0.0)
            web[0].add_file(f"{case.name} #{i}", path, args, want, (tol, tol))
        assert_close(runtime.run(args), want, case.tolerance)
