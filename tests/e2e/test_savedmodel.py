"""From artifacts and bundles to TensorFlow SavedModels, run in TensorFlow without JAX.

This process exports the sources with JAX; one child process
(``tests.helpers.tf_scenario``) converts them, loads and runs the SavedModels
and tries every refused conversion, never importing JAX; a few more run the
tools a user runs (``saved_model_cli``, ``jaxport inspect``, an interrupted
``jaxport convert``, a conversion of in-process objects). Importing
TensorFlow costs seconds a process, so the work is grouped in those few.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jax
import jax.export
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding, PartitionSpec

import jaxport
from jaxport.adapters.mlir.bindings import export_target_version
from jaxport.adapters.flatbuffers.codec import decode_artifact, encode_artifact
from jaxport.domain.bundle.manifest import Manifest
from tests.helpers import bundle_model
from tests.helpers.tf_scenario import REFUSALS

pytestmark = pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None,
                                reason="TensorFlow is not installed (pip install 'jaxport[tf]')")

ROOT = Path(__file__).resolve().parents[2]
SAVED_MODEL_CLI = Path(sys.executable).parent / "saved_model_cli"
W = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)


def child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
            "TF_CPP_MIN_LOG_LEVEL": "2"}


def static_fn(x: jax.Array) -> dict[str, Any]:
    return {"mean": jnp.mean(x, axis=0), "scaled": {"tanh": jnp.tanh(x @ W)}}


def batch_fn(x: jax.Array) -> jax.Array:
    return jnp.sin(x) @ W


def export_sources(root: Path) -> dict[str, Any]:
    """Writes every source of the scenario into ``root``; returns JAX's expected results."""
    bundle_model.save(root / "model", examples=bundle_model.examples())
    bundle_model.save(root / "other_weights", seed=1)
    shutil.copytree(root / "model", root / "swapped")
    bundle_model.swap_weights(root / "swapped", root / "other_weights")
    expected: dict[str, Any] = {}
    inputs: dict[str, np.ndarray] = {}
    bundle = jaxport.load_bundle(root / "model")
    for batch in (3, 5):
        x, y = (np.asarray(a) for a in bundle_model.inputs(batch))
        inputs[f"x{batch}"], inputs[f"y{batch}"] = x, y
        expected[f"predict {batch}"] = np.asarray(bundle["predict"](x))
        expected[f"loss {batch}"] = np.asarray(bundle["loss"](x, y))
        dw, dx = jax.grad(_loss_of_w_and_x(bundle, y), argnums=(0, 1))(bundle.params["dense"].w, x)
        expected[f"dloss/dw {batch}"], expected[f"dloss/dx {batch}"] = np.asarray(dw), np.asarray(dx)
    inputs["static"] = np.linspace(0, 1, 12, dtype=np.float32).reshape(3, 4)
    static = jaxport.export(jax.jit(static_fn))(jax.ShapeDtypeStruct((3, 4), jnp.float32))
    jaxport.save(static, root / "static.jaxport")
    expected["static"] = static.call(inputs["static"])
    b, = jax.export.symbolic_shape("b")
    theirs = jax.export.export(jax.jit(batch_fn))(jax.ShapeDtypeStruct((b, 4), jnp.float32))
    (root / "jax_export.jaxport").write_bytes(theirs.serialize())
    for batch in (2, 7):
        inputs[f"jx{batch}"] = np.linspace(-2, 2, batch * 4, dtype=np.float32).reshape(batch, 4)
        expected[f"jax.export {batch}"] = np.asarray(theirs.call(inputs[f"jx{batch}"]))
    np.savez(root / "inputs.npz", **inputs)  # type: ignore[arg-type]  # numpy's stub: kwargs of bool
    _export_refused(root, static)
    return expected


def _loss_of_w_and_x(bundle: jaxport.Bundle, y: np.ndarray) -> Any:
    def loss(w: jax.Array, x: jax.Array) -> jax.Array:
        params = {**bundle.params, "dense": bundle.params["dense"]._replace(w=w)}
        result: jax.Array = bundle.functions["loss"].call(params, x, y)
        return result

    return loss


def _export_refused(root: Path, static: jaxport.Exported) -> None:
    """The sources each conversion refusal needs (and the cuda-only one, which converts)."""
    f32 = jax.ShapeDtypeStruct((3,), jnp.float32)
    jaxport.save(jaxport.export(jax.jit(jnp.sin), platforms=("cuda",))(f32), root / "cuda.jaxport")
    jaxport.save(jaxport.export(jax.jit(jnp.sin), platforms=("cuda", "cpu"))(f32), root / "multi.jaxport")
    solve = jaxport.export(jax.jit(jnp.linalg.solve))(jax.ShapeDtypeStruct((3, 3), jnp.float32), f32)
    jaxport.save(solve, root / "lapack.jaxport")
    mesh = jax.make_mesh((2,), ("x",), devices=jax.devices()[:2])
    sharded = jax.jit(jnp.sin, in_shardings=NamedSharding(mesh, PartitionSpec("x")))
    jaxport.save(jaxport.export(sharded)(jax.ShapeDtypeStruct((4,), jnp.float32)), root / "sharded.jaxport")
    jaxport.save(jaxport.export(jax.jit(lambda x: x.astype(jnp.float32)))(
        jax.ShapeDtypeStruct((3,), jnp.int4)), root / "int4.jaxport")
    jaxport.save(jaxport.export(jax.jit(lambda k: jax.random.uniform(k, (3,))))(
        jax.eval_shape(lambda: jax.random.key(0))), root / "key.jaxport")
    jaxport.save(jaxport.export(jax.jit(lambda d: d["a b"] + d["a_b"]))({"a b": f32, "a_b": f32}),
                 root / "colliding.jaxport")
    record = decode_artifact(static.serialize())
    crafted = {
        "version11": dataclasses.replace(record, calling_convention_version=11),
        "metal": dataclasses.replace(record, platforms=("metal",)),
        # A module of a future StableHLO: its header says so and it uses an operation version
        # that TensorFlow's StableHLO does not have.
        "newer_stablehlo": dataclasses.replace(record, mlir_module_serialized=record.mlir_module_serialized
                                               .replace(b"StableHLO_v" + export_target_version().encode(), b"StableHLO_v9.99.0", 1)
                                               .replace(b"tanh_v2", b"tanh_v9")),
    }
    for name, crafted_record in crafted.items():
        (root / f"{name}.jaxport").write_bytes(encode_artifact(crafted_record))


@dataclasses.dataclass
class Scenario:
    root: Path
    expected: dict[str, Any]
    outcome: dict[str, Any]
    arrays: dict[str, np.ndarray]


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    root = tmp_path_factory.mktemp("savedmodel")
    expected = export_sources(root)
    done = subprocess.run([sys.executable, "-m", "tests.helpers.tf_scenario", str(root)], cwd=ROOT,
                          env=child_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-5000:]
    outcome = json.loads((root / "outcome.json").read_text())
    return Scenario(root, expected, outcome, dict(np.load(root / "arrays.npz")))


def test_a_bundle_converts_with_one_line_saying_what_was_written(scenario: Scenario) -> None:
    result = scenario.outcome["convert bundle"]
    assert result["status"] == 0, result["stderr"]
    assert result["stdout"].startswith(
        f"wrote {scenario.root / 'model_tf'}: a TensorFlow SavedModel with 3 functions (predict, loss, init), "
        "3 variants, 6 weights (80 bytes), ")
    assert "serving_default calls predict" in result["stdout"]
    assert result["stdout"].count("\n") == 1
    assert scenario.outcome["signatures"] == ["init", "loss", "predict", "serving_default"]
    assert scenario.outcome["variables"] == sorted(
        ["dense/w:0", "dense/b:0", "layers/0/scale:0", "mask:0", "offset:0", "rng:0"])


def test_the_loaded_savedmodel_gives_its_weights_as_params_as_every_target_does(scenario: Scenario) -> None:
    manifest = Manifest.from_json((scenario.root / "model" / "manifest.json").read_bytes())
    assert scenario.outcome["params"] == {
        w.name: {"dtype": w.data_dtype, "shape": list(w.data_shape), "writeable": False, "sha256": w.sha256}
        for w in manifest.weights}


@pytest.mark.parametrize("batch", [3, 5])
def test_the_converted_bundle_runs_in_tensorflow_as_in_jax(scenario: Scenario, batch: int) -> None:
    got, want = scenario.arrays, scenario.expected
    names = ["predict signature", "serving_default"] + (["jaxport predict"] if batch == 5 else [])
    for name in names:  # the scenario calls jaxport's front at batch 5 only
        np.testing.assert_allclose(got[f"{name} {batch}"], want[f"predict {batch}"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[f"loss {batch}"], want[f"loss {batch}"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("batch", [3, 5])
def test_gradients_through_the_converted_loss_equal_jaxs(scenario: Scenario, batch: int) -> None:
    for wrt in ("dloss/dx", "dloss/dw"):
        np.testing.assert_allclose(scenario.arrays[f"{wrt} {batch}"], scenario.expected[f"{wrt} {batch}"],
                                   rtol=1e-5, atol=1e-6)


def test_a_static_artifact_keeps_its_dict_outputs_keys(scenario: Scenario) -> None:
    assert scenario.outcome["convert static"]["status"] == 0
    assert scenario.outcome["static outputs"] == ["mean", "scaled/tanh"]
    want = scenario.expected["static"]
    np.testing.assert_allclose(scenario.arrays["static mean"], want["mean"], rtol=1e-6)
    np.testing.assert_allclose(scenario.arrays["static scaled/tanh"], want["scaled"]["tanh"], rtol=1e-6)


@pytest.mark.parametrize("batch", [2, 7])
def test_an_artifact_that_jax_export_wrote_converts_too(scenario: Scenario, batch: int) -> None:
    assert scenario.outcome["convert jax.export"]["status"] == 0
    np.testing.assert_allclose(scenario.arrays[f"jax.export {batch}"], scenario.expected[f"jax.export {batch}"],
                               rtol=1e-6, atol=1e-6)


def test_a_wrong_shape_is_refused_by_tensorflow_and_by_jaxports_checks(scenario: Scenario) -> None:
    assert "error" in scenario.outcome["wrong shape in tf"]
    jaxport_error = scenario.outcome["wrong shape in jaxport"]
    assert jaxport_error["error"] == "ShapeMismatchError"
    assert "args[0].shape[1] (expected same constant): expected (b, 4) and called with (3, 5)" in jaxport_error["message"]
    tree = scenario.outcome["wrong tree in jaxport"]
    assert tree["error"] == "TreeMismatchError" and "less the bundle's weights" in tree["message"]


def test_jaxport_run_calls_a_savedmodel_through_tensorflow(scenario: Scenario) -> None:
    assert scenario.outcome["jaxport run"]["status"] == 0, scenario.outcome["jaxport run"]["stderr"]
    np.testing.assert_allclose(scenario.arrays["jaxport run loss 3"], scenario.expected["loss 3"], rtol=1e-5)


REASONS = {
    "custom call": "its module calls the custom call 'lapack_sgetrf_ffi', a LAPACK kernel of JAX's CPU runtime",
    "several devices": "its module is for 2 devices",
    "dtype": "(args[0]): int4[3] is the dtype int4, for which TensorFlow's XlaCallModule returns wrong values",
    "prng key argument": "(args[0]): key<fry>[] is a PRNG key array (key<fry>)",
    "calling convention": "calling convention version 11 is outside [4..10]",
    "platform": "it was exported for ['metal'] only",
    "stablehlo version": "its module does not verify",
    "default": "default='nope' names no function",
}


@pytest.mark.parametrize("name", list(REFUSALS))
def test_what_tensorflow_cannot_run_is_refused_before_anything_is_written(scenario: Scenario, name: str) -> None:
    result = scenario.outcome[f"refused {name}"]
    assert result["status"] == 2, result
    assert result["stderr"].startswith("jaxport convert: ConversionError: Cannot convert ")
    assert REASONS[name] in result["stderr"]
    assert result["left"] == []


def test_an_artifact_for_cuda_only_converts_and_running_it_here_is_a_platform_mismatch(scenario: Scenario) -> None:
    assert scenario.outcome["convert cuda"]["status"] == 0
    assert scenario.outcome["cuda only"]["error"] == "PlatformMismatchError"


def test_a_multi_platform_artifact_keeps_its_platforms_and_runs_on_this_cpu(scenario: Scenario) -> None:
    assert scenario.outcome["convert multi-platform"]["status"] == 0
    np.testing.assert_allclose(scenario.arrays["multi-platform"], np.sin(np.ones(3, np.float32)), rtol=1e-6)
    doc = json.loads((scenario.root / "multi_tf" / "assets.extra" / "jaxport" / "manifest.json").read_text())
    assert list(doc["functions"]) == ["sin"] and doc["target_details"]["default"] == "sin"
    assert doc["target_details"]["functions"]["sin"]["platforms"] == ["cuda", "cpu"]


def test_keys_that_the_old_naming_merged_get_two_wire_names(scenario: Scenario) -> None:
    assert scenario.outcome["convert keys that TensorFlow's old naming merged"]["status"] == 0
    doc = json.loads((scenario.root / "colliding_tf" / "assets.extra" / "jaxport" / "manifest.json").read_text())
    (function,) = doc["functions"].values()
    assert [i["name"] for i in function["signature"]["inputs"]] == ["arg0/a.20b", "arg0/a_b"]


def test_an_allowed_custom_call_converts_and_is_refused_by_verification_here(scenario: Scenario) -> None:
    assert scenario.outcome["convert allowed custom call"]["status"] == 0
    refusal = scenario.outcome["allowed custom call"]  # the verifying child called it: it cannot run here
    assert refusal["error"] == "ArtifactError" and "failed verification" in refusal["message"]
    assert "saved_model.pb: calling 'solve' on zeros" in refusal["message"]
    assert "lapack_sgetrf_ffi" in refusal["message"]
    failure = scenario.outcome["allowed custom call unverified"]  # unverified: typed, at the first call
    assert failure["error"] == "ArtifactCallError" and "lapack_sgetrf_ffi" in failure["message"]


def test_converting_and_serving_never_import_jax(scenario: Scenario) -> None:
    assert scenario.outcome["jax imported"] is False


def test_the_manifest_in_assets_extra_names_what_jaxport_wrote(scenario: Scenario) -> None:
    root = scenario.root / "model_tf"
    doc = json.loads((root / "assets.extra" / "jaxport" / "manifest.json").read_text())
    assert doc["target"] == "savedmodel" and doc["target_details"]["default"] == "predict"
    assert list(doc["functions"]) == ["predict", "loss", "init"]
    assert doc["functions"]["loss"]["signature"]["inputs"] == [
        {"name": "arg0", "dtype": "float32", "shape": ["b", "4"], "dims": ["b", 4]},
        {"name": "arg1", "dtype": "float32", "shape": ["b", "3"], "dims": ["b", 3]}]
    assert doc["functions"]["loss"]["variants"] == [{"file": "saved_model.pb", "dims": {}}]
    assert {"saved_model.pb", "assets.extra/jaxport/examples.safetensors"} <= set(doc["files"])
    assert all(not name.startswith("assets.extra/jaxport/manifest") for name in doc["files"])
    assert doc["examples"]["file"] == "assets.extra/jaxport/examples.safetensors"
    assert list(doc["examples"]["functions"]) == ["predict", "loss", "init"]
    assert doc["files"]["saved_model.pb"]["size"] == (root / "saved_model.pb").stat().st_size


def test_check_numerics_runs_a_savedmodels_golden_examples_on_tensorflow(scenario: Scenario) -> None:
    result = scenario.outcome["numerics savedmodel"]
    assert result["status"] == 0, result
    lines = result["stdout"].splitlines()
    assert lines[0] == f"{scenario.root / 'model_tf'}: 4 examples of 3 functions on savedmodel: ok"
    assert [line.split()[0] for line in lines[2:]] == ["predict", "loss", "init"]


def test_a_bundle_is_checked_on_tensorflow_by_name_through_a_conversion(scenario: Scenario) -> None:
    report = scenario.outcome["numerics bundle on tf"]
    assert report["ok"] and report["runtime"] == "savedmodel" and report["converted"] and report["examples"] == 4
    assert all(c["max_abs_error"] <= 1e-6 for c in report["checks"])


def test_weights_swapped_with_a_rewritten_manifest_fail_the_check_on_tensorflow_too(scenario: Scenario) -> None:
    report = scenario.outcome["numerics swapped on tf"]
    assert report["ok"] is False
    assert [(c["function"], c["passed"]) for c in report["checks"]] == [
        ("predict", False), ("predict", False), ("loss", False), ("init", True)]


def test_saved_model_cli_lists_the_signatures_and_runs_one(scenario: Scenario) -> None:
    root = scenario.root
    np.save(root / "x5.npy", np.load(root / "inputs.npz")["x5"])
    show = subprocess.run([str(SAVED_MODEL_CLI), "show", "--dir", str(root / "model_tf"), "--all"],
                          env=child_env(), capture_output=True, text=True, timeout=300)
    assert show.returncode == 0, show.stderr[-3000:]
    for name in ("predict", "loss", "init", "serving_default"):
        assert f"signature_def['{name}']:" in show.stdout
    assert "inputs['arg0'] tensor_info:" in show.stdout and "Method name is: tensorflow/serving/predict" in show.stdout
    run = subprocess.run([str(SAVED_MODEL_CLI), "run", "--dir", str(root / "model_tf"), "--tag_set", "serve",
                          "--signature_def", "predict", "--inputs", f"arg0={root / 'x5.npy'}",
                          "--outdir", str(root / "cli_out")],
                         env=child_env(), capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    np.testing.assert_allclose(np.load(root / "cli_out" / "output_0.npy"), scenario.expected["predict 5"],
                               rtol=1e-5, atol=1e-6)


def test_jaxport_inspect_reads_a_savedmodel_without_tensorflow_or_jax(scenario: Scenario) -> None:
    probe = ("import sys\nfrom jaxport.application.cli.main import main\n"
             f"status = main(['inspect', {str(scenario.root / 'model_tf')!r}])\n"
             "print(status, sorted(m for m in ('jax', 'tensorflow') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], env=child_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1] == "0 []"
    assert "a TensorFlow SavedModel, converted by jaxport (format 1): 3 functions, 3 variants, weights 6 arrays " \
        "(80 bytes) in the target's own form" in lines[0]
    assert "loss (reads the weights) (float32[b,4], float32[b,3]) -> float32[]" in lines
    assert "  inputs arg0, arg1; outputs output_0" in lines


INTERRUPTED = """
import sys
from jaxport.adapters.savedmodel import converter as savedmodel_writer
from jaxport.application.cli import main as cli

write = savedmodel_writer.write_savedmodel


def interrupted(*args, **kwargs):
    write(*args, **kwargs)  # the SavedModel is in the temporary directory: stop now
    raise KeyboardInterrupt


savedmodel_writer.write_savedmodel = interrupted
sys.exit(cli.main(["convert", sys.argv[1], "--to", "savedmodel", "-o", sys.argv[2]]))
"""


def test_an_interrupted_conversion_leaves_nothing_at_its_path(scenario: Scenario) -> None:
    out = scenario.root / "interrupted_tf"
    done = subprocess.run([sys.executable, "-c", INTERRUPTED, str(scenario.root / "model"), str(out)],
                          env=child_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 130, done.stderr[-3000:]
    assert sorted(p.name for p in scenario.root.iterdir() if out.name in p.name) == []


OBJECTS = """
import sys, json
import jax, jax.numpy as jnp, numpy as np, jaxport
sys.path.insert(0, {root!r})
from tests.helpers import bundle_model
exp = jaxport.export(jax.jit(jnp.tanh))(jax.ShapeDtypeStruct((3,), jnp.float32))
jaxport.to_savedmodel(exp, {out!r} + "/exp")
bundle = jaxport.load_bundle({bundle!r})
manifest = jaxport.to_savedmodel(bundle, {out!r} + "/bundle", default="predict")
x = np.asarray(bundle_model.inputs(4)[0])
got = jaxport.load_converted({out!r} + "/bundle")["predict"](x)
tanh = jaxport.load_converted({out!r} + "/exp")["tanh"](np.ones(3, np.float32))
print(json.dumps([float(np.abs(got - np.asarray(bundle["predict"](x))).max()),
                  float(np.abs(tanh - np.tanh(1.0)).max()), [f.name for f in manifest.functions]]))
"""


def test_an_exported_function_and_a_loaded_bundle_convert_in_process(scenario: Scenario) -> None:
    out = scenario.root / "objects"
    out.mkdir()
    code = OBJECTS.format(root=str(ROOT), out=str(out), bundle=str(scenario.root / "model"))
    done = subprocess.run([sys.executable, "-c", code], env=child_env(), capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    bundle_error, tanh_error, signatures = json.loads(done.stdout.splitlines()[-1])
    assert bundle_error < 1e-5 and tanh_error < 1e-6
    assert signatures == ["predict", "loss", "init"]
