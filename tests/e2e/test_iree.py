"""End to end: bundles and artifacts compiled with IREE (to_iree), loaded and called without JAX (load_iree).

Each size compiles in about a second: the module's fixtures convert once
(the bundle at b=1 and b=3 for ``predict``, b=2 for ``loss``; the static
artifact once) and the tests share them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import jaxport
from jaxport.errors import (
    ArtifactError, ConversionError, DtypeMismatchError, RankMismatchError, ShapeAssertionError, ShapeMismatchError,
    TargetMismatchError, TreeMismatchError, UncompiledSizeError, UsageError)
from tests.helpers import iree_model as model
from tests.helpers.extras import requires_iree

pytestmark = requires_iree

DIMS = {"predict": [{"b": 1}, {"b": 3}], "loss": [{"b": 2}]}


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return model.save_bundle(tmp_path_factory.mktemp("bundle") / "model")


@pytest.fixture(scope="module")
def converted(bundle: Path) -> Path:
    path = bundle.parent / "model_iree"
    jaxport.to_iree(bundle, path, dims=DIMS)
    return path


@pytest.fixture(scope="module")
def stats_converted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("stats")
    path = root / "stats_iree"
    jaxport.to_iree(model.save_stats(root / "stats.jaxport"), path)
    return path


CHILD = """
import json, sys
import numpy as np
import jaxport
bundle, stats, out = sys.argv[1:]
m = jaxport.load_iree(bundle)
ids = {b: np.random.default_rng(1).integers(0, 32, size=(b, 8)).astype(np.int32) for b in (1, 3, 2)}
results = {f"predict{b}": m["predict"](ids[b]) for b in (1, 3)}
results["loss2"] = m["loss"](ids[2], ids[2])
s = jaxport.load_iree(stats)["stats"](np.linspace(-2, 3, 15, dtype=np.float32).reshape(5, 3))
results.update({"mean": s["mean"], "max": s["max"], "l2": s["norm"]["l2"]})
np.savez(out, **results)
print(json.dumps({"loaded": sorted(n for n in ("jax", "jaxlib", "tensorflow") if n in sys.modules),
                  "functions": list(m), "params": list(m.params)[:2]}))
"""


def test_a_bundle_and_a_static_artifact_run_without_jax_equal_to_jax_at_every_size(
        converted: Path, stats_converted: Path, tmp_path: Path) -> None:
    out = tmp_path / "results.npz"
    done = subprocess.run([sys.executable, "-c", CHILD, str(converted), str(stats_converted), str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"loaded": [], "functions": ["predict", "loss"], "params": ["attn/k", "attn/q"]}
    got = np.load(out)
    params, exp = model.make_params(), model.exported()
    for b in (1, 3):
        ids = model.token_ids(b)
        np.testing.assert_allclose(got[f"predict{b}"], exp["predict"].call(params, ids), rtol=2e-5, atol=2e-5)
    ids = model.token_ids(2)
    np.testing.assert_allclose(got["loss2"], exp["loss"].call(params, ids, ids), rtol=2e-5, atol=2e-5)
    want = model.stats(model.STATS_INPUT)
    np.testing.assert_allclose(got["mean"], want["mean"], rtol=1e-6)
    np.testing.assert_allclose(got["max"], want["max"], rtol=1e-6)
    np.testing.assert_allclose(got["l2"], want["norm"]["l2"], rtol=1e-6)


def test_the_directory_holds_a_module_per_binding_the_bundles_weights_and_a_manifest(
        bundle: Path, converted: Path, stats_converted: Path) -> None:
    assert sorted(os.listdir(converted)) == ["loss.b=2.vmfb", "manifest.json", "params.safetensors",
                                             "predict.b=1.vmfb", "predict.b=3.vmfb"]
    assert (converted / "params.safetensors").read_bytes() == (bundle / "params.safetensors").read_bytes()
    manifest = json.loads((converted / "manifest.json").read_text())
    assert manifest["format"] == "jaxport-converted" and manifest["target"] == "iree"
    details = manifest["target_details"]
    assert details["requested_cpu"] == "host" and details["cpu"] != "host"
    assert details["triple"].startswith(("x86_64-", "aarch64-"))
    predict = manifest["functions"]["predict"]
    assert predict["variants"] == [{"file": "predict.b=1.vmfb", "dims": {"b": 1}},
                                   {"file": "predict.b=3.vmfb", "dims": {"b": 3}}]
    assert predict["signature"]["inputs"] == [{"name": "arg0", "dtype": "int32", "shape": ["b", "8"],
                                               "dims": ["b", 8]}]
    assert predict["signature"]["nr_weights"] == 9
    assert [c["text"] for c in predict["signature"]["constraints"]] == ["b <= 64"]
    assert manifest["weights"]["file"] == "params.safetensors"
    assert set(manifest["files"]) == {"loss.b=2.vmfb", "params.safetensors", "predict.b=1.vmfb",
                                      "predict.b=3.vmfb"}
    assert sorted(os.listdir(stats_converted)) == ["manifest.json", "stats.vmfb"]


def test_each_bad_call_is_refused_with_jaxports_typed_error(converted: Path) -> None:
    predict = jaxport.load_iree(converted)["predict"]
    ids = model.token_ids(3)
    with pytest.raises(TreeMismatchError, match="'predict' was exported"):
        predict(ids, ids)
    with pytest.raises(DtypeMismatchError, match=r"args\[0\]: expected int32 and called with float32"):
        predict(ids.astype(np.float32))
    with pytest.raises(RankMismatchError, match=r"args\[0\]: expected \(b, 8\) and called with \(24,\)"):
        predict(ids.reshape(-1))
    with pytest.raises(ShapeMismatchError, match=r"args\[0\]\.shape\[1\]"):
        predict(ids.reshape(6, 4))
    with pytest.raises(ShapeAssertionError, match="constraint b <= 64"):
        predict(model.token_ids(65))
    with pytest.raises(UncompiledSizeError, match=r"No module of 'predict' was compiled for b = 2; it was "
                                                  r"compiled for \{b=1\}, \{b=3\}"):
        predict(model.token_ids(2))


def test_both_cpu_drivers_give_the_same_answer(converted: Path) -> None:
    ids = model.token_ids(3)
    threaded = jaxport.load_iree(converted)["predict"](ids)
    np.testing.assert_array_equal(jaxport.load_iree(converted, driver="local-sync")["predict"](ids), threaded)
    with pytest.raises(UsageError, match="driver='gpu' is not one of IREE's CPU drivers"):
        jaxport.load_iree(converted, driver="gpu")


def test_a_damaged_module_or_weights_file_is_refused_before_iree_reads_it(converted: Path,
                                                                          tmp_path: Path) -> None:
    damaged = tmp_path / "damaged"
    shutil.copytree(converted, damaged)
    module = damaged / "predict.b=3.vmfb"
    data = bytearray(module.read_bytes())
    data[len(data) // 2] ^= 0xFF
    module.write_bytes(data)
    with pytest.raises(ArtifactError, match="predict.b=3.vmfb does not match its manifest"):
        jaxport.load_iree(damaged)
    shutil.copy(converted / "predict.b=3.vmfb", module)
    weights = damaged / "params.safetensors"
    data = bytearray(weights.read_bytes())
    data[-3] ^= 0xFF
    weights.write_bytes(data)
    with pytest.raises(ArtifactError, match="params.safetensors: the digest of the weight '.*' does not match"):
        jaxport.load_iree(damaged)
    with open(weights, "r+b") as f:
        f.truncate(100)
    with pytest.raises(ArtifactError, match="params.safetensors is truncated"):
        jaxport.load_iree(damaged)


def test_an_interrupted_conversion_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from jaxport.adapters.storage import atomic_directory

    def interrupted(path: object) -> None:
        raise KeyboardInterrupt("interrupted after writing every file")

    monkeypatch.setattr(atomic_directory, "fsync_directory", interrupted)
    with pytest.raises(KeyboardInterrupt):
        jaxport.to_iree(model.save_stats(tmp_path / "stats.jaxport"), tmp_path / "out")
    assert os.listdir(tmp_path) == ["stats.jaxport"]


def test_weights_are_read_as_parameters_by_their_key_paths_whatever_they_hold(tmp_path: Path) -> None:
    import jax

    def save(params: dict[str, np.ndarray], path: Path) -> Path:
        first, second = params
        specs = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), params)
        f = jaxport.export(jax.jit(lambda p, x: p[first] * x + p[second]))(specs, jax.ShapeDtypeStruct((3,), np.float32))
        jaxport.save_bundle(path, {"f": f}, params)
        return path

    keys = save({"a key with spaces": np.arange(3, dtype=np.float32), "ünï/côdé~": np.ones(3, np.float32)},
                tmp_path / "keys")
    jaxport.to_iree(keys, tmp_path / "keys_iree")
    m = jaxport.load_iree(tmp_path / "keys_iree")
    assert sorted(m.params) == ["a key with spaces", "ünï~1côdé~0"]
    np.testing.assert_array_equal(m["f"](np.full(3, 2, np.float32)), [1, 3, 5])
    quoted = save({'a "quoted" key': np.ones(3, np.float32), "b": np.ones(3, np.float32)}, tmp_path / "quoted")
    with pytest.raises(ConversionError, match=r"""the weight 'a "quoted" key' has a key with a quote"""):
        jaxport.to_iree(quoted, tmp_path / "quoted_iree")


def test_iree_run_module_runs_a_converted_function_without_python(converted: Path, tmp_path: Path) -> None:
    tool = Path(sys.executable).parent / "iree-run-module"
    ids = model.token_ids(3)
    np.save(tmp_path / "ids.npy", ids)
    done = subprocess.run([str(tool), "--device=local-task", f"--module={converted / 'predict.b=3.vmfb'}",
                           f"--parameters=model={converted / 'params.safetensors'}", "--function=main",
                           f"--input=@{tmp_path / 'ids.npy'}", f"--output=@{tmp_path / 'logits.npy'}"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    want = model.exported()["predict"].call(model.make_params(), ids)
    np.testing.assert_allclose(np.load(tmp_path / "logits.npy"), want, rtol=2e-5, atol=2e-5)


def jaxport_cli(*args: str) -> subprocess.CompletedProcess[str]:
    probe = ("import sys\nfrom jaxport.application.cli.main import main\nstatus = main(sys.argv[1:])\n"
             "print('jax loaded' if 'jax' in sys.modules or 'jaxlib' in sys.modules else 'no jax')\n"
             "sys.exit(status)")
    return subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, timeout=300)


def test_the_command_line_converts_runs_and_inspects_without_jax_but_to_convert(bundle: Path,
                                                                                tmp_path: Path) -> None:
    converted = tmp_path / "cli_iree"
    made = jaxport_cli("convert", str(bundle), "--to", "iree", "-o", str(converted), "--dims", "predict:b=1",
                       "--dims", "loss:b=1")
    assert made.returncode == 0, made.stderr
    assert made.stdout.startswith(f"wrote {converted}: IREE with 2 functions (predict, loss), 2 variants, "
                                  "9 weights (")
    refused = jaxport_cli("convert", str(bundle), "--to", "iree", "-o", str(tmp_path / "no"), "--dims", "predict:b=1")
    assert refused.returncode == 2 and "ConversionError: Cannot convert the function 'loss'" in refused.stderr
    ids = model.token_ids(1)
    np.savez(tmp_path / "in.npz", ids)
    done = jaxport_cli("run", str(converted), "predict", "--input", str(tmp_path / "in.npz"),
                       "--output", str(tmp_path / "out.npz"))
    assert done.returncode == 0 and done.stdout.endswith("no jax\n"), done.stdout + done.stderr
    want = model.exported()["predict"].call(model.make_params(), ids)
    np.testing.assert_allclose(np.load(tmp_path / "out.npz")["arr_0"], want, rtol=2e-5, atol=2e-5)
    shown = jaxport_cli("inspect", str(converted))
    assert shown.returncode == 0 and shown.stdout.endswith("no jax\n"), shown.stderr
    assert "predict (reads the weights) (int32[b,8]) -> float32[b,8,32]" in shown.stdout
    assert "  b=1: predict.b=1.vmfb (" in shown.stdout
    assert "--parameters=model=" in shown.stdout


def test_without_the_extra_loading_and_converting_name_it(converted: Path, bundle: Path, tmp_path: Path) -> None:
    probe = ("import sys\nsys.modules['iree'] = None  # as if iree-base-runtime and -compiler were not installed\n"
             "import jaxport\n"
             "for call in (lambda: jaxport.load_iree(sys.argv[1]), lambda: jaxport.to_iree(sys.argv[2], sys.argv[3], "
             "dims={'predict': [{'b': 1}], 'loss': [{'b': 1}]})):\n"
             "    try:\n        call()\n    except jaxport.errors.MissingExtraError as exc:\n        print(exc)\n")
    done = subprocess.run([sys.executable, "-c", probe, str(converted), str(bundle), str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=300)
    runtime, compiler = done.stdout.splitlines()
    assert runtime.startswith("IREE's runtime (iree-base-runtime) is not installed") and "jaxport[iree]" in runtime
    assert compiler.startswith("IREE's compiler (iree-base-compiler) is not installed") and "jaxport[iree]" in compiler
    assert not (tmp_path / "out").exists()


def test_a_directory_compiled_for_another_machine_says_so_and_is_refused_on_this_one(tmp_path: Path) -> None:
    artifact = model.save_stats(tmp_path / "stats.jaxport")
    out = tmp_path / "arm"
    done = jaxport_cli("convert", str(artifact), "--to", "iree", "-o", str(out),
                       "--target-triple", "aarch64-linux-gnu")
    assert done.returncode == 0, done.stderr
    assert f"wrote {out}: IREE with 1 function (stats), 1 variant, " in done.stdout
    assert "compiled for aarch64 (CPU generic" in done.stdout
    target = json.loads((out / "manifest.json").read_text())["target_details"]
    assert (target["requested_triple"], target["cpu"], target["triple"]) == (
        "aarch64-linux-gnu", "generic", "aarch64-unknown-unknown-eabi-elf")
    assert "compiled for aarch64 (CPU generic" in jaxport_cli("inspect", str(out)).stdout
    if os.uname().machine in ("aarch64", "arm64"):
        pytest.skip("this machine runs aarch64 modules")
    with pytest.raises(TargetMismatchError, match=r"compiled for aarch64 \(CPU generic, triple aarch64-"):
        jaxport.load_iree(out)


def test_an_existing_output_path_is_replaced_only_when_asked(tmp_path: Path) -> None:
    artifact = model.save_stats(tmp_path / "stats.jaxport")
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("not jaxport's")
    with pytest.raises(FileExistsError, match="pass overwrite=True"):
        jaxport.to_iree(artifact, out)
    assert sorted(os.listdir(out)) == ["mine.txt"]
    with pytest.raises(TypeError, match="options for to='iree' are a IreeOptions, not a SavedModelOptions"):
        jaxport.convert(artifact, out, to="iree", options=jaxport.SavedModelOptions(), overwrite=True)
    with pytest.raises(UsageError, match="Unknown target 'nope'"):
        jaxport.convert(artifact, out, to="nope", overwrite=True)
    manifest = jaxport.convert(artifact, out, to="iree", options=jaxport.IreeOptions(), overwrite=True)
    assert sorted(os.listdir(out)) == ["manifest.json", "stats.vmfb"] and manifest.target == "iree"
    assert jaxport_cli("convert", str(artifact), "--to", "iree", "-o", str(out)).returncode == 2
    assert jaxport_cli("convert", str(artifact), "--to", "iree", "-o", str(out), "--force").returncode == 0
