"""The runtimes that the shared call-check table goes through, and the calls it makes.

Every target of jaxport's registry (:data:`jaxport.domain.targets.registry.TARGETS`)
joins by being registered: tests/e2e/test_runtime_calls.py converts one
bundle for each target (``python -m tests.helpers.runtimes convert TARGET
BUNDLE DIR``, in a child process), then loads and calls the converted
directory in another child (``python -m tests.helpers.runtimes call DIR
OUT.json``), which writes each case's outcome and the heavy modules it
imported. JAX runs the same table on the bundle itself, in the test process.
Nothing here imports JAX at module level, so a child that calls never loads it.
"""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

#: What each case's call passes: (args, kwargs).
Call = tuple[tuple[Any, ...], dict[str, Any]]

# The function under test (see tests/e2e/test_runtime_calls.py): a bundle's
# f(params, x: f32[b, 4], extra={"y": f32[b]}) with the constraint b >= 2,
# its weights bound; the targets of static shapes compile it for b = 3 and b = 5.
FEATURES = 4
#: The bindings that targets of static shapes (IREE) compile for.
DIMS = {"f": [{"b": 3}, {"b": 5}]}
#: The modules a child that calls a converted directory must not import (besides the target's own).
HEAVY = ("jax", "jaxlib", "tensorflow")


def inputs(batch: int, *, y_batch: int | None = None, x_dtype: str = "float32",
           x_shape: tuple[int, ...] | None = None) -> Call:
    """The call ``f(x, {"y": y})`` for a batch (or for the bad shape or dtype given)."""
    shape = x_shape if x_shape is not None else (batch, FEATURES)
    x = np.linspace(-1, 1, int(np.prod(shape)), dtype=np.float32).reshape(shape).astype(x_dtype)
    y = np.linspace(0, 2, y_batch if y_batch is not None else batch, dtype=np.float32)
    return (x, {"y": y}), {}


#: Each case: the call, and the error every runtime raises (None: it runs). "uncompiled size"
#: raises ``UncompiledSizeError`` where a target compiles static shapes, and runs elsewhere.
CASES: dict[str, tuple[Call, str | None]] = {
    "wrong tree": (((inputs(3)[0][0],), {}), "TreeMismatchError"),
    "wrong dtype": (inputs(3, x_dtype="int32"), "DtypeMismatchError"),
    "wrong rank": (inputs(3, x_shape=(3,)), "RankMismatchError"),
    "wrong constant dim": (inputs(3, x_shape=(3, 5)), "ShapeMismatchError"),
    "inconsistent symbolic dims": (inputs(3, y_batch=5), "ShapeAssertionError"),
    "violated constraint": (inputs(1), "ShapeAssertionError"),
    "uncompiled size": (inputs(7), "UncompiledSizeError"),
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
        outcomes[name] = {"result": {"out": np.asarray(result["out"]).tolist(),
                                     "total": [np.asarray(t).tolist() for t in result["total"]]}}
    return outcomes


def convert(target: str, bundle: str, out: str, report: str = "") -> None:
    """Converts the bundle (or artifact) for ``target`` (with :data:`DIMS` where it compiles static
    shapes); with ``report``, writes there the modules of JAX and jaxlib the conversion left loaded."""
    import jaxport
    from jaxport.domain.targets.registry import target as entry
    from tests.helpers.loaded_modules import WATCHED

    needs = entry(target).plan.needs_bindings
    jaxport.convert(bundle, out, to=target, dims=DIMS if needs else None)
    if report:
        Path(report).write_text(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in WATCHED)))


def call(directory: str, out: str) -> None:
    """Loads the converted directory, runs every case, writes the outcomes, the refusals of
    :func:`load_refusals` and the heavy modules imported."""
    import jaxport

    outcomes: dict[str, Any] = run_cases(jaxport.load_converted(directory)["f"])
    outcomes.update(load_refusals(directory, Path(out).with_suffix(".damaged")))
    outcomes["imported"] = sorted(m for m in HEAVY if m in sys.modules)
    Path(out).write_text(json.dumps(outcomes))


def load_refusals(directory: str, copy: Path) -> dict[str, dict[str, str]]:
    """How loading refuses the directory with an option no runtime takes ("bad option") and,
    in ``copy``, with its model file truncated under a re-sealed manifest ("damaged model")."""
    import shutil

    import jaxport
    from jaxport.domain.converted.manifest import ConvertedManifest
    from tests.helpers.resealed import manifest_path_of, truncate

    shutil.copytree(directory, copy)
    manifest = ConvertedManifest.from_json((copy / str(manifest_path_of(copy))).read_bytes())
    file = manifest.function("f").variants[0].file
    truncate(copy, file)
    refusals: dict[str, dict[str, str]] = {}
    cases: tuple[tuple[str, str | Path, dict[str, Any]], ...] = (("bad option", directory, {"no_such_option": 1}),
                                                            ("damaged model", copy, {}))
    for case, path, options in cases:
        try:
            jaxport.load_converted(path, **options)
            refusals[case] = {"file": file}
        except Exception as exc:  # noqa: BLE001 - the outcome is the error's type and message
            refusals[case] = {"error": type(exc).__name__, "message": str(exc), "file": file}
    return refusals


if __name__ == "__main__":
    command, *rest = sys.argv[1:]
    if command == "convert":
        convert(*rest)
    else:
        call(*rest)
