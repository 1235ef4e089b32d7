"""The TensorFlow side of the SavedModel tests, run in one child process that never imports JAX.

``python -m tests.helpers.tf_scenario WORKDIR`` reads the sources that
tests/e2e/test_savedmodel.py prepared in WORKDIR (artifacts and a bundle,
written with JAX), converts them through ``jaxport convert`` (the command
line's ``main``, in this process), loads the SavedModels with
``tf.saved_model.load``, calls them, differentiates through them, tries each
refused conversion, checks golden examples on TensorFlow, and writes what it
saw to ``WORKDIR/outcome.json`` and the arrays to ``WORKDIR/arrays.npz``. TensorFlow is imported by jaxport's
adapter first (the conversion): TensorFlow's own import would load JAX when
it is installed.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

#: The refused conversions: name -> (source file in WORKDIR, extra command-line arguments).
REFUSALS: dict[str, tuple[str, tuple[str, ...]]] = {
    "custom call": ("lapack.jaxport", ()),
    "several devices": ("sharded.jaxport", ()),
    "dtype": ("int4.jaxport", ()),
    "prng key argument": ("key.jaxport", ()),
    "calling convention": ("version11.jaxport", ()),
    "platform": ("metal.jaxport", ()),
    "stablehlo version": ("newer_stablehlo.jaxport", ()),
    "default": ("model", ("--default", "nope")),
}


def convert(source: Path, out: Path, *extra: str) -> dict[str, Any]:
    """``jaxport convert`` in this process: its exit status, output and error lines."""
    from jaxport.application.cli.main import main

    stdout, stderr = io.StringIO(), io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        status = main(["convert", str(source), "--to", "savedmodel", "-o", str(out), *extra])
    return {"status": status, "stdout": stdout.getvalue(), "stderr": stderr.getvalue(),
            "seconds": time.perf_counter() - start}


def run_command(path: Path, function: str, *inputs: Path, output: Path) -> dict[str, Any]:
    """``jaxport run PATH FUNCTION --input ... --output OUT`` in this process."""
    from jaxport.application.cli.main import main

    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        status = main(["run", str(path), function, *(f"--input={p}" for p in inputs), f"--output={output}"])
    return {"status": status, "stderr": stderr.getvalue()}


def check_numerics_command(path: Path) -> dict[str, Any]:
    """``jaxport check --numerics PATH`` in this process: its exit status and output."""
    from jaxport.application.cli.main import main

    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        status = main(["check", "--numerics", str(path)])
    return {"status": status, "stdout": stdout.getvalue()}


def outcome_of(call: Any) -> dict[str, Any]:
    """The value of ``call()``, or the type and message of what it raised."""
    try:
        return {"value": call()}
    except Exception as exc:
        return {"error": type(exc).__name__, "message": str(exc)}


def main(workdir: Path) -> None:
    out: dict[str, Any] = {}
    arrays: dict[str, np.ndarray] = {}
    inputs = dict(np.load(workdir / "inputs.npz"))
    out["convert bundle"] = convert(workdir / "model", workdir / "model_tf", "--default", "predict")
    out["convert static"] = convert(workdir / "static.jaxport", workdir / "static_tf")
    out["convert jax.export"] = convert(workdir / "jax_export.jaxport", workdir / "jax_export_tf")
    out["convert cuda"] = convert(workdir / "cuda.jaxport", workdir / "cuda_tf")
    out["convert multi-platform"] = convert(workdir / "multi.jaxport", workdir / "multi_tf")
    out["convert allowed custom call"] = convert(workdir / "lapack.jaxport", workdir / "lapack_tf",
                                                 "--allow-custom-call", "lapack_sgetrf_ffi",
                                                 "--allow-custom-call", "lapack_strsm_ffi")
    out["convert keys that TensorFlow's old naming merged"] = convert(workdir / "colliding.jaxport",
                                                                      workdir / "colliding_tf")
    for name, (source, extra) in REFUSALS.items():
        target = workdir / f"refused_{name.replace(' ', '_')}"
        result = convert(workdir / source, target, *extra)
        result["left"] = sorted(p.name for p in workdir.iterdir() if p.name.startswith(f".{target.name}.")
                                or p.name == target.name)
        out[f"refused {name}"] = result

    import tensorflow as tf  # loaded already, by the conversion

    model = tf.saved_model.load(str(workdir / "model_tf"))
    out["signatures"] = sorted(model.signatures)
    for batch in (3, 5):
        x, y = inputs[f"x{batch}"], inputs[f"y{batch}"]
        arrays[f"predict signature {batch}"] = model.signatures["predict"](arg0=tf.constant(x))["output_0"].numpy()
        arrays[f"serving_default {batch}"] = model.signatures["serving_default"](arg0=tf.constant(x))["output_0"].numpy()
        arrays[f"loss {batch}"] = model.loss(tf.constant(x), tf.constant(y)).numpy()
        xt = tf.constant(x)
        with tf.GradientTape() as tape:
            tape.watch(xt)
            loss = model.loss(xt, tf.constant(y))
        weights = {v.name: v for v in model.jaxport_weights}
        dx, dw = tape.gradient(loss, [xt, weights["dense/w:0"]])
        arrays[f"dloss/dx {batch}"], arrays[f"dloss/dw {batch}"] = dx.numpy(), dw.numpy()
    out["variables"] = sorted(v.name for v in model.jaxport_weights)
    out["wrong shape in tf"] = outcome_of(lambda: model.signatures["predict"](arg0=tf.zeros((3, 5))))
    static = tf.saved_model.load(str(workdir / "static_tf"))
    result = static.signatures["serving_default"](arg0=tf.constant(inputs["static"]))
    out["static outputs"] = sorted(result)
    arrays.update({f"static {k}": v.numpy() for k, v in result.items()})
    jax_export = tf.saved_model.load(str(workdir / "jax_export_tf"))
    for batch in (2, 7):
        arrays[f"jax.export {batch}"] = jax_export.signatures["serving_default"](
            arg0=tf.constant(inputs[f"jx{batch}"]))["output_0"].numpy()

    from jaxport import load_converted

    def only(path: Path) -> Any:
        """The one function of a SavedModel converted from an artifact."""
        model = load_converted(path)
        return model[next(iter(model))]

    functions = load_converted(workdir / "model_tf")
    out["params"] = {name: {"dtype": str(a.dtype), "shape": list(a.shape), "writeable": a.flags.writeable,
                            "sha256": hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()}
                     for name, a in functions.params.items()}
    arrays["jaxport predict 5"] = functions["predict"](inputs["x5"])
    out["wrong shape in jaxport"] = outcome_of(lambda: functions["predict"](np.zeros((3, 5), np.float32)))
    out["wrong tree in jaxport"] = outcome_of(lambda: functions["loss"](inputs["x3"]))
    out["cuda only"] = outcome_of(lambda: only(workdir / "cuda_tf")(np.ones(3, np.float32)))
    arrays["multi-platform"] = only(workdir / "multi_tf")(np.ones(3, np.float32))
    solve_args = (np.eye(3, dtype=np.float32), np.ones(3, np.float32))
    out["allowed custom call"] = outcome_of(lambda: only(workdir / "lapack_tf")(*solve_args))
    unverified = load_converted(workdir / "lapack_tf", verify=False)
    out["allowed custom call unverified"] = outcome_of(lambda: unverified[next(iter(unverified))](*solve_args))
    np.save(workdir / "x3.npy", inputs["x3"])
    np.save(workdir / "y3.npy", inputs["y3"])
    out["jaxport run"] = run_command(workdir / "model_tf", "loss", workdir / "x3.npy", workdir / "y3.npy",
                                     output=workdir / "run_loss.npz")
    arrays["jaxport run loss 3"] = np.load(workdir / "run_loss.npz")["arr_0"]
    out["numerics savedmodel"] = check_numerics_command(workdir / "model_tf")
    from jaxport.application.conversion.numerics import check_numerics

    out["numerics bundle on tf"] = check_numerics(workdir / "model", runtime="savedmodel").to_json()
    out["numerics swapped on tf"] = check_numerics(workdir / "swapped", runtime="savedmodel").to_json()
    out["jax imported"] = "jax" in sys.modules
    (workdir / "outcome.json").write_text(json.dumps(out, default=str))
    np.savez(workdir / "arrays.npz", **arrays)  # type: ignore[arg-type]  # numpy's stub: kwargs of bool


if __name__ == "__main__":
    main(Path(sys.argv[1]))
