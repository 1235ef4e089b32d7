"""The runtimes that the shared call-check tests go through, and the calls they make.

A runtime joins the shared tests (tests/e2e/test_runtime_calls.py) by adding a
:class:`RuntimeEntry` to :data:`RUNTIMES`: how to make the callable function
from an artifact file (converting it where the runtime needs that). A runtime
whose import is slow runs its cases in one child process
(``python -m tests.helpers.runtimes NAME ARTIFACT WORKDIR OUT.json``), which
writes each case's outcome as JSON. Nothing here imports JAX at module level,
so a child process for another runtime never loads it.
"""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

#: What each case's call passes: (args, kwargs).
Call = tuple[tuple[Any, ...], dict[str, Any]]


@dataclass(frozen=True)
class RuntimeEntry:
    """A runtime of the shared tests.

    Attributes:
        name: the runtime's name (the test ids use it).
        make: the callable function of an artifact file; the second argument
            is a fresh directory for what the runtime needs to write.
        requires: a module that must be importable, else the runtime's tests skip.
        in_process: whether the cases run in the test process (else in one child).
    """

    name: str
    make: Callable[[Path, Path], Callable[..., Any]]
    requires: str | None = None
    in_process: bool = True


def _jax(artifact: Path, workdir: Path) -> Callable[..., Any]:
    from jaxport.adapters.flatbuffers_codec import decode_artifact
    from jaxport.application.runtime_function import RuntimeFunction, jax_runtime

    return RuntimeFunction(decode_artifact(artifact.read_bytes()), jax_runtime())


def _iree(artifact: Path, workdir: Path) -> Callable[..., Any]:
    import jaxport

    jaxport.to_iree(artifact, workdir / "iree", dims={"f": [{"b": 3}, {"b": 5}]})  # the batches of CASES
    return jaxport.load_iree(workdir / "iree")["f"]


def _tf(artifact: Path, workdir: Path) -> Callable[..., Any]:
    import jaxport
    from jaxport.application.savedmodel_load import load_savedmodel

    jaxport.to_savedmodel(artifact, workdir / "model_tf")
    return load_savedmodel(workdir / "model_tf")["serving_default"]


RUNTIMES: dict[str, RuntimeEntry] = {e.name: e for e in (
    RuntimeEntry("jax", _jax),
    RuntimeEntry("iree", _iree, requires="iree.runtime"),
    RuntimeEntry("tf", _tf, requires="tensorflow", in_process=False),
)}

# The function under test (see tests/e2e/test_runtime_calls.py):
# f(x: f32[b, 4], extra={"y": f32[b]}) with the constraint b >= 2.
FEATURES = 4


def inputs(batch: int, *, y_batch: int | None = None, x_dtype: str = "float32",
           x_shape: tuple[int, ...] | None = None) -> Call:
    """The call ``f(x, {"y": y})`` for a batch (or for the bad shape or dtype given)."""
    shape = x_shape if x_shape is not None else (batch, FEATURES)
    x = np.linspace(-1, 1, int(np.prod(shape)), dtype=np.float32).reshape(shape).astype(x_dtype)
    y = np.linspace(0, 2, y_batch if y_batch is not None else batch, dtype=np.float32)
    return (x, {"y": y}), {}


CASES: dict[str, tuple[Call, str | None]] = {
    "wrong tree": (((inputs(3)[0][0],), {}), "TreeMismatchError"),
    "wrong dtype": (inputs(3, x_dtype="int32"), "DtypeMismatchError"),
    "wrong rank": (inputs(3, x_shape=(3,)), "RankMismatchError"),
    "wrong constant dim": (inputs(3, x_shape=(3, 5)), "ShapeMismatchError"),
    "inconsistent symbolic dims": (inputs(3, y_batch=5), "ShapeAssertionError"),
    "violated constraint": (inputs(1), "ShapeAssertionError"),
    "batch 3": (inputs(3), None),
    "batch 5": (inputs(5), None),
}


def run_cases(function: Callable[..., Any]) -> dict[str, dict[str, Any]]:
    """Each case's outcome: ``{"error": class name, "message": ...}`` or ``{"result": {key: list}}``."""
    outcomes: dict[str, dict[str, Any]] = {}
    for name, ((args, kwargs), _) in CASES.items():
        try:
            result = function(*args, **kwargs)
        except Exception as exc:
            outcomes[name] = {"error": type(exc).__name__, "message": str(exc),
                              "traceback": traceback.format_exc()}
            continue
        outcomes[name] = {"result": {key: np.asarray(value).tolist() for key, value in result.items()}}
    return outcomes


def main(argv: list[str]) -> int:
    """``NAME ARTIFACT WORKDIR OUT``: runs the cases through runtime NAME, writes OUT (JSON)."""
    name, artifact, workdir, out = argv
    function = RUNTIMES[name].make(Path(artifact), Path(workdir))
    outcomes = run_cases(function)
    outcomes["jax imported"] = {"result": "jax" in sys.modules}
    Path(out).write_text(json.dumps(outcomes))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
