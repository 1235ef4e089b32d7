"""The ``jaxport`` command, run as a user runs it: in a subprocess, as the script and as ``python -m``.

Every process that imports JAX is slow to start, so the artifacts are
exported once per module and the bad inputs that need no JAX fail before it loads.
"""

from __future__ import annotations

import importlib
import io
import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from safetensors.numpy import save_file

from jaxport.application.cli.common import Progress

from tests.helpers.jax_cache import KEEP_EVERY_COMPILATION

SCRIPT = Path(sys.executable).parent / "jaxport"
COMMANDS = ("export", "run", "check", "warm", "diff", "inspect", "mlir")

MODEL = '''
import jax.numpy as jnp

def f(w, b, x, *, scale):
    """A small function with a keyword argument and a nested result."""
    h = jnp.tanh(x @ w + b)
    return {"y": h * scale, "n": (jnp.sum(x, axis=1),)}

def nested(params, x):
    return x @ params["w"] + params["b"]

def predict(params, x):
    return jnp.tanh(x @ params["dense"]["w"] + params["dense"]["b"])

def g(x, y):
    return jnp.sin(x) + y

def g_of_x(x, y):
    return jnp.sin(x) + 1
'''
PLAIN = "def h(x):\n    return x\n\nNOT_A_FUNCTION = 3\n"


@dataclass(frozen=True)
class Workspace:
    root: Path
    f: Path
    g: Path
    g_again: Path
    inputs: Path
    quiet_export: tuple[str, str]


def python_path(first: Path) -> str:
    """``first``, then this process's PYTHONPATH: the command imports the jaxport under test."""
    return os.pathsep.join([str(first), *filter(None, [os.environ.get("PYTHONPATH")])])


def cli(*args: str | Path, cwd: Path, script: bool = False,
        jax_cache: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Runs the command in a fresh process (``python -m jaxport`` unless ``script``), with
    JAX's compilation cache at ``jax_cache`` keeping every compilation (when given)."""
    head = [str(SCRIPT)] if script else [sys.executable, "-m", "jaxport"]
    env = {**os.environ, "PYTHONPATH": python_path(cwd)}
    if jax_cache is not None:
        env["JAX_COMPILATION_CACHE_DIR"] = str(jax_cache)
        env.update({name.upper(): str(value) for name, value in KEEP_EVERY_COMPILATION.items()})
    return subprocess.run([*head, *map(str, args)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    root = tmp_path_factory.mktemp("cli")
    (root / "model.py").write_text(MODEL)
    (root / "plain.py").write_text(PLAIN)
    (root / "broken.py").write_text("raise RuntimeError('no GPU here')\n")
    done = cli("export", "model:f", "--arg", "f32[3,4]", "--arg", "f32[4]", "--arg", "f32[b,3]",
               "--kwarg", "scale=f32[]", "--constraint", "b >= 2", "--vjp-order", "1",
               "-o", "f.jaxport", cwd=root)
    ok(done)
    rng = np.random.default_rng(0)
    np.savez(root / "in.npz", rng.normal(size=(3, 4)).astype(np.float32),
             rng.normal(size=4).astype(np.float32), rng.normal(size=(5, 3)).astype(np.float32),
             scale=np.float32(2))
    ok(cli("export", "model:g", "--arg", "f32[3]", "--arg", "f32[3]", "--platform", "cpu",
               "--platform", "tpu", "-o", "g.jaxport", cwd=root))
    (root / "g_again.jaxport").write_bytes((root / "g.jaxport").read_bytes())
    save_file({"dense/w": np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2),
               "dense/b": np.array([0.5, -0.5], np.float32)}, str(root / "weights.safetensors"))
    ok(cli("export", "model:predict", "--params", "weights.safetensors", "--arg", "f32[b,3]",
           "--vjp-order", "1", "-o", "model.bundle", cwd=root))
    return Workspace(root, root / "f.jaxport", root / "g.jaxport", root / "g_again.jaxport", root / "in.npz",
                     (done.stdout, done.stderr))


def test_the_script_is_installed_and_its_help_lists_every_subcommand(tmp_path: Path) -> None:
    out = ok(cli("--help", cwd=tmp_path, script=True))
    for command in COMMANDS:
        assert f"\n    {command} " in out
    assert ok(cli("--help", cwd=tmp_path)) == out  # python -m jaxport is the same command
    assert ok(cli("--version", cwd=tmp_path)).strip() == "jaxport 0.1.0"


@pytest.mark.parametrize("command", COMMANDS)
def test_every_subcommand_has_help(command: str, tmp_path: Path) -> None:
    assert f"usage: jaxport {command}" in ok(cli(command, "--help", cwd=tmp_path))


@pytest.mark.parametrize("script", [True, False], ids=["script", "python-m"])
def test_inspect_loads_neither_jax_nor_jaxlib(ws: Workspace, script: bool) -> None:
    head = [str(SCRIPT)] if script else [sys.executable, "-m", "jaxport"]
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    done = subprocess.run([*head, "inspect", str(ws.f), str(ws.root / "model.bundle")], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "jaxport.application.cli" in loaded
    assert not {m for m in loaded if m in ("jax", "jaxlib") or m.startswith(("jax.", "jaxlib."))}
    assert "f(float32[3,4], float32[4], float32[b,3], scale=float32[])" in done.stdout
    assert "predict(<params: 2 arrays>, float32[b,3])" in done.stdout


def test_export_writes_what_the_specs_say(ws: Workspace) -> None:
    import jaxport

    info = jaxport.inspect(ws.f.read_bytes())
    assert info.signature == ("(float32[3,4], float32[4], float32[b,3], scale=float32[]) "
                              "-> {'n': (float32[b],), 'y': float32[b,4]}")
    assert info.vjp_order == 1 and info.platforms == ("cpu",)
    assert jaxport.inspect(ws.g.read_bytes()).platforms == ("cpu", "tpu")


def model(ws: Workspace) -> Any:
    sys.path.insert(0, str(ws.root))
    try:
        return importlib.import_module("model")
    finally:
        sys.path.remove(str(ws.root))


def test_export_then_run_gives_what_the_function_gives_in_python(ws: Workspace) -> None:
    with np.load(ws.inputs) as data:
        w, b, x, scale = data["arr_0"], data["arr_1"], data["arr_2"], data["scale"]
    expected = model(ws).f(w, b, x, scale=scale)
    ok(cli("run", ws.f, "--input", ws.inputs, "--output", "out.npz", cwd=ws.root))
    with np.load(ws.root / "out.npz") as out:  # leaves in order: n[0], then y
        np.testing.assert_allclose(out["arr_0"], expected["n"][0], rtol=1e-6)
        np.testing.assert_allclose(out["arr_1"], expected["y"], rtol=1e-6)
        assert sorted(out.files) == ["arr_0", "arr_1"]


def test_run_takes_nested_arguments_as_leaves_in_flattening_order(ws: Workspace) -> None:
    import jaxport

    params = {"w": np.ones((3, 2), np.float32), "b": np.arange(2, dtype=np.float32)}
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    jaxport.save(jaxport.export(model(ws).nested)(params, x), ws.root / "nested.jaxport")
    np.savez(ws.root / "leaves.npz", params["b"], params["w"], x)  # b before w: dict keys sort
    out = ok(cli("run", "nested.jaxport", "--input", "leaves.npz", cwd=ws.root))
    assert out.strip() == "result: float32[2,2] [ 3.,  4., 12., 13.]"


def test_run_reads_bfloat16_inputs_that_numpy_stored_as_raw_bytes(ws: Workspace) -> None:
    import ml_dtypes

    import jaxport

    jaxport.save(jaxport.export(lambda x: x * 2)(np.ones(3, ml_dtypes.bfloat16)), ws.root / "bf16.jaxport")
    np.savez(ws.root / "bf16.npz", np.array([1, 2, 3], ml_dtypes.bfloat16))
    with np.load(ws.root / "bf16.npz") as stored:
        assert stored["arr_0"].dtype.kind == "V"  # what NumPy gives back
    out = ok(cli("run", "bf16.jaxport", "--input", "bf16.npz", cwd=ws.root))
    assert out.strip() == "result: bfloat16[3] [2, 4, 6]"


def test_run_without_output_prints_each_result(ws: Workspace) -> None:
    np.save(ws.root / "x.npy", np.arange(3, dtype=np.float32))
    np.savez(ws.root / "y.npz", np.ones(3, np.float32))
    out = ok(cli("run", ws.g, "--input", "x.npy", "--input", "y.npz", cwd=ws.root))
    assert out.strip() == "result: float32[3] [1.    , 1.8415, 1.9093]"


def test_diff_of_equal_artifacts_is_empty_with_status_0(ws: Workspace) -> None:
    assert ok(cli("diff", ws.g, ws.g_again, cwd=ws.root)) == ""


def test_diff_of_different_artifacts_lists_the_differences_with_status_1(ws: Workspace) -> None:
    done = cli("diff", ws.g, ws.f, cwd=ws.root)
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert "function name: g -> f" in lines
    assert "platforms: cpu, tpu -> cpu" in lines
    assert "vjp order: 0 -> 1" in lines
    assert "signature:" in lines and "  - (float32[3], float32[3]) -> float32[3]" in lines
    assert "module ops stablehlo.sine: 1 -> 0" in lines and "module ops stablehlo.tanh: 0 -> 1" in lines
    assert any(line.startswith("module size (bytes): ") for line in lines)


def test_diff_of_a_file_whose_module_does_not_parse_is_bad_input_with_status_2(ws: Workspace) -> None:
    import dataclasses

    from jaxport.adapters.flatbuffers.codec import decode_artifact, encode_artifact

    record = decode_artifact(ws.g.read_bytes())
    module = bytearray(record.mlir_module_serialized)
    module[len(module) // 2:] = b"\xff" * (len(module) - len(module) // 2)
    damaged = ws.root / "g_damaged.jaxport"
    damaged.write_bytes(encode_artifact(dataclasses.replace(record, mlir_module_serialized=bytes(module))))
    done = cli("diff", ws.g, damaged, cwd=ws.root)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.splitlines()) == 1 and "ArtifactError" in done.stderr, done.stderr


def test_diff_of_one_export_sealed_and_unsealed_is_the_same_program_with_a_trailer(ws: Workspace) -> None:
    import jaxport

    exp = jaxport.deserialize(ws.f.read_bytes())  # symbolic, with the constraint b >= 2 and a VJP
    (ws.root / "f_sealed.jaxport").write_bytes(exp.serialize(vjp_order=1))
    (ws.root / "f_plain.jaxport").write_bytes(exp.serialize(vjp_order=1, integrity=False))
    out = ok(cli("diff", "f_sealed.jaxport", "f_plain.jaxport", cwd=ws.root))
    assert out == ("same program; only f_sealed.jaxport has the jaxport trailer, with symbolic "
                   "constraints that f_plain.jaxport cannot record: b >= 2\n")
    out = ok(cli("diff", "f_plain.jaxport", "f_sealed.jaxport", cwd=ws.root))
    assert out.startswith("same program; only f_sealed.jaxport has the jaxport trailer")


def test_diff_of_a_jaxport_file_and_a_jax_export_file_of_one_export_names_the_trailer(ws: Workspace) -> None:
    import jax.export

    (ws.root / "g_jax.jaxport").write_bytes(jax.export.deserialize(bytearray(ws.g.read_bytes())).serialize())
    out = ok(cli("diff", ws.g, "g_jax.jaxport", cwd=ws.root))
    assert out == f"same program; only {ws.g} has the jaxport trailer (it holds no symbolic constraints)\n"
    (ws.root / "f_jax.jaxport").write_bytes(jax.export.deserialize(bytearray(ws.f.read_bytes())).serialize(vjp_order=1))
    out = ok(cli("diff", "f_jax.jaxport", "f.jaxport", cwd=ws.root))
    assert out.startswith("same program; only f.jaxport has the jaxport trailer, with symbolic constraints")
    assert out.endswith(": b >= 2\n")


def test_diff_of_two_sealed_files_whose_constraints_differ_names_them_with_status_1(ws: Workspace) -> None:
    from jaxport.domain.artifact.integrity import Extension, seal, unseal

    flatbuffer = unseal(ws.f.read_bytes()).flatbuffer
    (ws.root / "f_b3.jaxport").write_bytes(seal(flatbuffer, Extension((("b >= 3",), ("b >= 3",)))))
    done = cli("diff", "f.jaxport", "f_b3.jaxport", cwd=ws.root)
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines() == ["symbolic constraints: b >= 2 -> b >= 3",
                                        "vjp() symbolic constraints: b >= 2 -> b >= 3"]


def test_diff_names_a_field_that_the_summary_does_not_show(ws: Workspace) -> None:
    ok(cli("export", "model:g_of_x", "--arg", "f32[3]", "--arg", "f32[3]", "--platform", "cpu",
           "--platform", "tpu", "-o", "g_of_x.jaxport", cwd=ws.root))
    done = cli("diff", ws.g, "g_of_x.jaxport", cwd=ws.root)
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert "function name: g -> g_of_x" in lines and "kept arguments: 0, 1 -> 0" in lines
    assert not any("trailer" in line or "other fields" in line for line in lines)


def test_mlir_prints_the_module(ws: Workspace) -> None:
    out = ok(cli("mlir", ws.g, cwd=ws.root))
    assert "stablehlo.sine" in out and "func.func public @main" in out


def test_export_with_params_writes_a_bundle_that_run_calls_with_its_weights(ws: Workspace) -> None:
    import jaxport

    info = jaxport.inspect(ws.root / "model.bundle")
    assert isinstance(info, jaxport.BundleInfo)
    assert [f.name for f in info.functions] == ["predict"] and info.total_bytes == 32
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.save(ws.root / "x.npy", x)
    ok(cli("run", "model.bundle", "predict", "--input", "x.npy", "--output", "y.npz", cwd=ws.root))
    params = {"dense": {"w": np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2),
                        "b": np.array([0.5, -0.5], np.float32)}}
    with np.load(ws.root / "y.npz") as out:
        np.testing.assert_allclose(out["arr_0"], model(ws).predict(params, x), rtol=1e-6)


def test_inspect_of_a_bundle_lists_its_functions_and_weights(ws: Workspace) -> None:
    out = ok(cli("inspect", "model.bundle", cwd=ws.root))
    assert "predict(<params: 2 arrays>, float32[b,3]) -> float32[b,2]" in out
    assert "dense/w   float32  (3, 2)       24" in out and "vjp order: 1" in out


def custom_call_artifact(root: Path) -> Path:
    import jax
    import jax.numpy as jnp

    import jaxport

    def with_custom_call(x: jax.Array) -> jax.Array:
        return jax.ffi.ffi_call("my_custom_target", jax.ShapeDtypeStruct(x.shape, x.dtype))(x)

    exp = jaxport.export(jax.jit(with_custom_call),
                         disabled_checks=[jaxport.DisabledSafetyCheck.custom_call("my_custom_target")])(
        jax.ShapeDtypeStruct((4,), jnp.float32))
    jaxport.save(exp, root / "custom.jaxport")
    return root / "custom.jaxport"


def test_check_passes_good_artifacts_and_bundles_and_fails_damaged_ones(ws: Workspace) -> None:
    damaged = bytearray(ws.g.read_bytes())
    damaged[len(damaged) // 2] ^= 0x01
    (ws.root / "damaged.jaxport").write_bytes(damaged)
    custom = custom_call_artifact(ws.root)
    done = cli("check", ws.g, "model.bundle", "damaged.jaxport", custom, cwd=ws.root)
    assert done.returncode == 1, done.stderr
    good, bundle, bad, refused = done.stdout.splitlines()
    assert good.startswith(f"{ws.g}: ok (sealed; sha256 ") and bundle == "model.bundle: ok (bundle of 1 function)"
    assert bad.startswith("damaged.jaxport: FAILED: The artifact's digest does not match its content")
    assert refused.startswith(f"{custom}: FAILED: ") and "my_custom_target" in refused
    allowed = cli("check", "--json", "--allow-custom-call", "my_custom_target", custom, ws.g, cwd=ws.root)
    assert allowed.returncode == 0, allowed.stdout
    assert [json.loads(line)["ok"] for line in allowed.stdout.splitlines()] == [True, True]


def test_warm_fills_the_cache_that_a_later_process_hits(ws: Workspace, tmp_path: Path) -> None:
    cache = tmp_path / "jax-cache"
    assert ok(cli("warm", "g.jaxport", cwd=ws.root, jax_cache=cache)) == (
        f"g.jaxport: in JAX's compilation cache at {cache}\n")
    assert len(list(cache.glob("*-cache"))) == 1
    assert ok(cli("warm", "f.jaxport", "--arg", "f32[3,4]", "--arg", "f32[4]", "--arg", "f32[8,3]",
                  "--kwarg", "scale=f32[]", cwd=ws.root, jax_cache=cache)) == (
        f"f.jaxport: in JAX's compilation cache at {cache}\n")
    assert len(list(cache.glob("*-cache"))) == 2
    ok(cli("warm", "g.jaxport", cwd=ws.root, jax_cache=cache))
    assert len(list(cache.glob("*-cache"))) == 2  # the second warm hit what the first compiled


def test_warm_compiles_a_bundles_functions_with_its_weights(ws: Workspace, tmp_path: Path) -> None:
    cache = tmp_path / "jax-cache"
    static = tmp_path / "static.bundle"
    ok(cli("export", "model:predict", "--params", "weights.safetensors", "--arg", "f32[2,3]", "-o", static,
           cwd=ws.root))
    assert ok(cli("warm", static, cwd=ws.root, jax_cache=cache)) == (
        f"{static} predict: in JAX's compilation cache at {cache}\n")
    assert ok(cli("warm", "model.bundle", "predict", "--arg", "f32[5,3]", cwd=ws.root, jax_cache=cache)) == (
        f"model.bundle predict: in JAX's compilation cache at {cache}\n")
    assert len(list(cache.glob("*-cache"))) == 2
    np.save(tmp_path / "x.npy", np.ones((5, 3), np.float32))
    ok(cli("run", "model.bundle", "--input", tmp_path / "x.npy", cwd=ws.root, jax_cache=cache))
    assert len(list(cache.glob("*-cache"))) == 2  # the run loaded what warm compiled


def test_inspect_json_is_one_object_per_artifact(ws: Workspace) -> None:
    lines = ok(cli("inspect", "--json", ws.g, ws.f, cwd=ws.root)).splitlines()
    assert [json.loads(line)["fun_name"] for line in lines] == ["g", "f"]


BAD_INPUTS = {
    "unknown dtype": (["export", "model:g", "--arg", "f33[3]", "-o", "x"], "unknown dtype 'f33'"),
    "unclosed spec": (["export", "model:g", "--arg", "f32[3", "-o", "x"], "'f32[3' is not DTYPE[DIMS]"),
    "bad dimension": (["export", "model:g", "--arg", "f32[b+]", "-o", "x"], "array spec 'f32[b+]': syntax error"),
    "bad keyword": (["export", "model:g", "--kwarg", "f32[3]", "-o", "x"], "is not NAME=DTYPE[DIMS]"),
    "bad constraint": (["export", "model:g", "--arg", "f32[b]", "--constraint", "b >=", "-o", "x"],
                       "--constraint 'b >=' does not parse"),
    "repeated keyword": (["export", "model:g", "--kwarg", "a=f32[]", "--kwarg", "a=f32[3]", "-o", "x"],
                         "--kwarg a is given twice"),
    "no colon": (["export", "model", "--arg", "f32[3]", "-o", "x"], "'model' is not MODULE:FUNCTION"),
    "no module": (["export", "nomodule:f", "--arg", "f32[3]", "-o", "x"], "cannot import module 'nomodule'"),
    "no function": (["export", "plain:nofun", "--arg", "f32[3]", "-o", "x"], "module 'plain' has no attribute 'nofun'"),
    "module fails": (["export", "broken:f", "--arg", "f32[3]", "-o", "x"],
                     "importing module 'broken' failed: RuntimeError: no GPU here"),
    "not callable": (["export", "plain:NOT_A_FUNCTION", "-o", "x"], "plain:NOT_A_FUNCTION is a int, not a function"),
    "bad platform": (["export", "plain:h", "--arg", "f32[3]", "--platform", "cpux", "-o", "x"],
                     "argument --platform: invalid choice: 'cpux'"),
    "no output dir": (["export", "plain:h", "--arg", "f32[3]", "-o", "nodir/x"], "directory nodir does not exist"),
    "missing artifact": (["run", "missing.jaxport"], "No such file or directory: missing.jaxport"),
    "damaged artifact": (["run", "plain.py"], "plain.py is not a valid artifact"),
    "directory artifact": (["mlir", "."], ". is a directory, not an artifact file"),
    "damaged inspect": (["inspect", "plain.py"], "inspect: ArtifactError: plain.py is not a valid artifact"),
    "damaged diff": (["diff", "g.jaxport", "plain.py"], "plain.py is not a valid artifact"),
    "missing diff": (["diff", "g.jaxport", "nothere"], "No such file or directory: nothere"),
    "missing input": (["run", "g.jaxport", "--input", "nothere.npz"], "no such input file: nothere.npz"),
    "bad input file": (["run", "g.jaxport", "--input", "plain.py"], "plain.py is not a readable .npy or .npz file"),
    "no such bundle function": (["run", "model.bundle", "nope"], "bundle model.bundle has no function 'nope'"),
    "bundle without inputs": (["run", "model.bundle", "predict"],
                              "model.bundle predict takes 1 argument besides the bundle's weights "
                              "(args[0]: float32[b,3]) but no --input was given: give it with --input "
                              "FILE.npy (one array each, repeat in order) or --input FILE.npz (arr_0, arr_1, ...)"),
    "artifact without inputs": (["run", "f.jaxport"],
                                "f.jaxport takes 3 arguments and keyword argument scale (args[0]: float32[3,4], "
                                "args[1]: float32[4], args[2]: float32[b,3], kwargs['scale']: float32[]) but no "
                                "--input was given: give them with"),
    "function of a file": (["run", "g.jaxport", "g"], "g.jaxport is an artifact file, not a bundle"),
    "missing params": (["export", "model:predict", "--params", "nothere.npz", "--arg", "f32[3]", "-o", "b"],
                       "no such weights file: nothere.npz"),
    "bad params": (["export", "model:predict", "--params", "plain.py", "--arg", "f32[3]", "-o", "b"],
                   "plain.py is not a readable .npy or .npz file"),
    "missing check": (["check", "nothere.jaxport"], "No such file or directory: nothere.jaxport"),
    "warm symbolic spec": (["warm", "f.jaxport", "--arg", "f32[b]"], "warm compiles for concrete shapes"),
    "warm without specs": (["warm", "f.jaxport"], "f.jaxport has symbolic shapes (float32[b,3]): give the shapes"),
    "warm no such bundle function": (["warm", "model.bundle", "nope"], "bundle model.bundle has no function 'nope'"),
    "warm symbolic bundle": (["warm", "model.bundle"], "model.bundle predict has symbolic shapes (float32[b,3])"),
    "warm function of a file": (["warm", "g.jaxport", "g"], "g.jaxport is an artifact file, not a bundle"),
    "unknown command": (["frobnicate"], "invalid choice: 'frobnicate'"),
    "missing argument": (["export", "model:g"], "the following arguments are required: -o/--output"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_is_one_line_on_stderr_and_status_2(ws: Workspace, case: str) -> None:
    args, message = BAD_INPUTS[case]
    done = cli(*args, cwd=ws.root)
    assert done.returncode == 2
    assert done.stdout == "" and "Traceback" not in done.stderr
    assert len(done.stderr.splitlines()) == 1 and message in done.stderr, done.stderr


def test_shapes_that_do_not_match_are_one_line_with_status_2(ws: Workspace) -> None:
    np.savez(ws.root / "wrong.npz", np.ones(4, np.float32), np.ones(3, np.float32))
    done = cli("run", ws.g, "--input", "wrong.npz", cwd=ws.root)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines() == ["jaxport run: ShapeMismatchError: Shape mismatch for args[0].shape[0] "
                                        "(expected same constant): expected (3,) and called with (4,)"]


def test_a_bundle_function_given_too_many_inputs_counts_the_callers_arguments(ws: Workspace) -> None:
    np.save(ws.root / "x53.npy", np.ones((5, 3), np.float32))
    done = cli("run", "model.bundle", "predict", "--input", "x53.npy", "--input", "x53.npy", cwd=ws.root)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert ("args is a tuple of length 2 in the invocation and a tuple of length 1 when exported"
            in done.stderr), done.stderr


CLIPPED = """
import jax.numpy as jnp

def mask(x):
    return x[:, :, None] * jnp.tril(jnp.ones((1024, 1024), x.dtype))[:x.shape[1], :x.shape[1]]
"""


def test_an_export_that_fails_on_a_clipped_dimension_prints_the_note_naming_the_constraint(
        tmp_path: Path) -> None:
    (tmp_path / "clipped.py").write_text(CLIPPED)
    done = cli("export", "clipped:mask", "--arg", "f32[b,t]", "-o", "m.jaxport", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    first, *notes = done.stderr.splitlines()
    assert "min(1024, t)" in first
    assert any(n.startswith("note: ") and 'constraints=("t <= 1024",)' in n for n in notes), done.stderr
    ok(cli("export", "clipped:mask", "--arg", "f32[b,t]", "--constraint", "t <= 1024",
           "-o", "m.jaxport", cwd=tmp_path))


def test_debug_shows_the_traceback(ws: Workspace) -> None:
    done = cli("export", "model:g", "--arg", "f33[3]", "-o", "x", "--debug", cwd=ws.root)
    assert done.returncode != 0 and "Traceback (most recent call last)" in done.stderr
    assert "ArgSpecError" in done.stderr


def test_export_shows_its_phases_on_a_terminal_and_is_quiet_in_a_pipe(ws: Workspace) -> None:
    import pty

    leader, follower = pty.openpty()
    try:
        done = subprocess.run([sys.executable, "-m", "jaxport", "export", "plain:h", "--arg", "f32[3]",
                               "-o", "h.jaxport"], cwd=ws.root, stdout=subprocess.PIPE, stderr=follower,
                              env={**os.environ, "PYTHONPATH": python_path(ws.root)}, timeout=120)
        shown = os.read(leader, 65536).decode()
    finally:
        os.close(leader)
        os.close(follower)
    assert done.returncode == 0 and done.stdout == b""
    phases = [line.split("] ", 1)[1] for line in shown.splitlines()]
    assert phases == ["importing plain:h ...", "tracing, lowering and checking ...",
                      "serializing (vjp order 0) and writing h.jaxport ...", "wrote h.jaxport"]
    assert ws.quiet_export == ("", "")  # the fixture's export, in a pipe


def test_progress_is_shown_on_a_terminal_only() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    shown, hidden = Terminal(), io.StringIO()
    for stream in (shown, hidden):
        with Progress(stream).phase("lowering"):
            pass
    assert hidden.getvalue() == ""
    assert textwrap.dedent(shown.getvalue()).strip().endswith("s] lowering ...")
