"""End to end: the ``onnx`` target of the registry (``jaxport.to_onnx``, ``jaxport convert --to onnx``).

A bundle with golden examples is converted once (module fixture); the
checks of golden examples, ``inspect`` and the loader's refusals run on it.
The translation's own cases are tests/adapters/test_onnx_translate.py, the
models' tests/e2e/test_onnx_models.py, the shared bad-call table
tests/e2e/test_runtime_calls.py.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("onnx", reason="the ONNX tests need the jaxport[onnx] extra (onnx)")
pytest.importorskip("onnxruntime", reason="the ONNX tests need the jaxport[onnx] extra (onnxruntime)")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import onnx  # noqa: E402

import jaxport  # noqa: E402
from jaxport.errors import ArtifactError, ConversionError, UnsupportedOperationError, UsageError  # noqa: E402
from tests.helpers import golden, iree_model as model, resealed  # noqa: E402
from tests.helpers.web_batch import WebBatch, module_batch  # noqa: E402

#: The batch of this module's models, with JAX's outputs, to run in onnxruntime-web too (empty: no Node).
_WEB: list[WebBatch] = []


@pytest.fixture(scope="module", autouse=True)
def onnxruntime_web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The converted directories' models also run in onnxruntime-web (WebAssembly, under Node) at the module's
    end, compared with the same outputs of JAX and the same tolerances."""
    yield from module_batch(_WEB, tmp_path_factory.mktemp("onnxruntime-web"))


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return golden.save_bundle(tmp_path_factory.mktemp("onnx_target") / "model", predict_batches=(1, 5))


@pytest.fixture(scope="module")
def converted(bundle: Path) -> Path:
    path = bundle.parent / "model_onnx"
    jaxport.to_onnx(bundle, path)
    return path


def test_the_directory_holds_one_model_per_function_and_the_bundles_weights_byte_for_byte(
        bundle: Path, converted: Path) -> None:
    manifest = json.loads((converted / "manifest.json").read_text())
    assert manifest["target"] == "onnx"
    assert sorted(manifest["files"]) == ["examples.safetensors", "loss.onnx", "params.safetensors", "predict.onnx"]
    assert (converted / "params.safetensors").read_bytes() == (bundle / "params.safetensors").read_bytes()
    predict = onnx.load(str(converted / "predict.onnx"), load_external_data=False)
    assert [i.name for i in predict.graph.input] == ["arg0"] and [o.name for o in predict.graph.output] == ["output_0"]
    assert all(t.data_location == onnx.TensorProto.EXTERNAL for t in predict.graph.initializer
               if t.name.startswith("weights:"))


def test_check_numerics_runs_the_golden_examples_on_onnx_runtime_without_jax(converted: Path) -> None:
    table, outcome = golden.check_in_child(converted)
    assert outcome["loaded"] == [] and outcome["status"] == 0
    report = outcome["report"]
    assert report["ok"] and report["runtime"] == "onnx" and report["examples"] == 3
    assert table[0] == f"{converted}: 3 examples of 2 functions on onnx: ok"
    if _WEB:  # the golden examples (JAX's outputs at save), under the numerics check's tolerances by dtype
        params = model.make_params()
        for b in (1, 5):
            ids = model.token_ids(b)
            _WEB[0].add_file(f"predict b={b}", converted / "predict.onnx", [ids],
                             [np.asarray(jax.jit(model.predict)(params, ids))])
        ids = model.token_ids(2)
        _WEB[0].add_file("loss", converted / "loss.onnx", [ids, ids], [np.asarray(jax.jit(model.loss)(params, ids, ids))])


def test_inspect_shows_the_opset_ir_version_producer_and_dim_params(converted: Path) -> None:
    shown = subprocess.run([sys.executable, "-m", "jaxport", "inspect", str(converted)], capture_output=True,
                           text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert (f"target: ONNX opset 21, IR version 10, written by jaxport {jaxport.__version__} with onnx "
            f"{onnx.__version__}; dim params: predict (b), loss (b)") in shown.stdout.splitlines()


def test_convert_on_the_command_line_takes_an_opset(bundle: Path, tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "jaxport", "convert", str(bundle), "--to", "onnx", "--opset",
                           "22", "-o", str(tmp_path / "out")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "ONNX opset 22" in done.stdout
    assert onnx.load(str(tmp_path / "out" / "predict.onnx"), load_external_data=False).opset_import[0].version == 22
    refused = subprocess.run([sys.executable, "-m", "jaxport", "convert", str(bundle), "--to", "onnx", "--opset",
                              "20", "-o", str(tmp_path / "old")], capture_output=True, text=True, timeout=300)
    assert refused.returncode == 2 and "opset 20 is not one of [21, 22, 23, 24, 25, 26]" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and not (tmp_path / "old").exists()
    with pytest.raises(UsageError, match=r"^ir_version 9 is not one of \[10, 11, 12, 13\]$"):
        jaxport.OnnxOptions(ir_version=9)


def test_a_changed_weights_file_is_refused_before_onnx_runtime_opens_anything(converted: Path,
                                                                           tmp_path: Path) -> None:
    path = tmp_path / "changed"
    shutil.copytree(converted, path)
    data = bytearray((path / "params.safetensors").read_bytes())
    data[-1] ^= 1
    (path / "params.safetensors").write_bytes(bytes(data))
    with pytest.raises(ArtifactError, match="params.safetensors"):
        jaxport.load_converted(path)


@pytest.mark.parametrize("location", ["../params.safetensors", b"params\xff.safetensors"])
def test_external_data_leaving_the_directory_or_not_utf8_is_refused_at_load_under_a_rewritten_manifest(
        converted: Path, tmp_path: Path, location: str | bytes) -> None:
    path = tmp_path / "hostile"
    shutil.copytree(converted, path)
    shutil.copyfile(path / "params.safetensors", tmp_path / "params.safetensors")
    hostile = onnx.load(str(path / "predict.onnx"), load_external_data=False)
    for tensor in hostile.graph.initializer:
        for entry in tensor.external_data:
            if entry.key == "location":
                entry.value = "X" * len(location)
    # protobuf writes only UTF-8: the bytes that are not go in after it serialized them.
    data = hostile.SerializeToString().replace(b"X" * len(location), location if isinstance(location, bytes)
                                               else location.encode())
    resealed.rewrite(path, "predict.onnx", data)
    shown = location.decode(errors="backslashreplace") if isinstance(location, bytes) else location
    with pytest.raises(ArtifactError, match=re.escape("predict.onnx: the tensor '") + ".*"
                       + re.escape(f"' reads its data from '{shown}'")):
        jaxport.load_converted(path)


def test_session_options_reach_onnx_runtime_and_bad_ones_are_refused(converted: Path) -> None:
    ids = model.token_ids(3)
    quick = jaxport.load_converted(converted, threads=1, optimization="disable")
    tuned = jaxport.load_converted(converted)
    np.testing.assert_allclose(quick["predict"](ids), tuned["predict"](ids), rtol=1e-5, atol=1e-6)
    with pytest.raises(UsageError, match="ONNX Runtime's options are"):
        jaxport.load_converted(converted, driver="local-task")
    with pytest.raises(UsageError, match=r"optimization is one of \['all', 'basic', 'disable', 'extended'\], "
                                         "not 'fastest'"):
        jaxport.load_converted(converted, optimization="fastest")
    with pytest.raises(UsageError, match="threads=-1 is not an int >= 0"):
        jaxport.load_converted(converted, threads=-1)
    with pytest.raises(UsageError, match="providers='CPUExecutionProvider' is not a list"):
        jaxport.load_converted(converted, providers="CPUExecutionProvider")


def test_what_the_translation_cannot_express_is_refused_naming_the_operation(tmp_path: Path) -> None:
    signal = jax.ShapeDtypeStruct((8,), jnp.float32)
    conv = jaxport.export(jax.jit(lambda x: jnp.tanh(jnp.fft.rfft(x)).real))(signal)
    with pytest.raises(UnsupportedOperationError, match=r"the operation stablehlo.tanh at .*test_onnx.*"
                                                        r"complex values are translated \(as pairs of floats\) only"):
        jaxport.to_onnx(conv, tmp_path / "conv")
    inverse = jaxport.export(jax.jit(jnp.linalg.eigh))(jax.ShapeDtypeStruct((3, 3), jnp.float32))
    with pytest.raises(UnsupportedOperationError, match="stablehlo.custom_call @lapack_ssyevd_ffi at .* a LAPACK "
                                                        "kernel \\(eigh\\) whose convention ONNX operators cannot "
                                                        "reproduce exactly: the signs of the eigenvectors"):
        jaxport.to_onnx(inverse, tmp_path / "inverse")
    assert not (tmp_path / "conv").exists() and not (tmp_path / "inverse").exists()


def test_what_the_plan_refuses_is_refused_before_the_translation(tmp_path: Path) -> None:
    # The ONNX target's plan (the pipeline's, once): the translation repeats none of its refusals.
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    eight = jaxport.export(jax.jit(lambda x: x * 2))(jax.ShapeDtypeStruct((3,), jnp.float8_e4m3fn))
    with pytest.raises(ConversionError, match=r"^Cannot convert the function '<lambda>' to ONNX \(args\[0\]\): "
                                              r"\S+ is the dtype float8_e4m3fn, which ONNX cannot hold$"):
        jaxport.to_onnx(eight, tmp_path / "eight")
    sharding = NamedSharding(Mesh(np.array(jax.devices()[:2]), ("x",)), PartitionSpec("x"))
    sharded = jaxport.export(jax.jit(lambda x: x * 2, in_shardings=sharding))(jax.ShapeDtypeStruct((4,), jnp.float32))
    with pytest.raises(ConversionError, match=r"to ONNX: its module is for 2 devices \(sharded\); export it for one"):
        jaxport.convert(sharded, tmp_path / "sharded", to="onnx")
    assert not (tmp_path / "eight").exists() and not (tmp_path / "sharded").exists()


WEB_WITHOUT_ONNX = """
import sys
sys.modules["onnx"] = None  # as if it were not installed: importing it raises ImportError
import jaxport
from jaxport.errors import ConversionError
try:
    jaxport.to_onnx(sys.argv[1], sys.argv[2], web=True)
except ConversionError as exc:
    print(f"{type(exc).__name__}: {exc}")
print("imported:", sorted(m for m in sys.modules if m.startswith("jaxport.adapters.onnx")))
"""


def test_the_web_refusal_comes_from_the_plan_before_anything_imports_onnx(tmp_path: Path) -> None:
    artifact = tmp_path / "half.jaxport"
    jaxport.save(jaxport.export(jax.jit(lambda x: x * 2))(jax.ShapeDtypeStruct((3,), jnp.bfloat16)), artifact)
    done = subprocess.run([sys.executable, "-c", WEB_WITHOUT_ONNX, str(artifact), str(tmp_path / "web")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    first, imported = done.stdout.strip().splitlines()[-2:]
    assert first.startswith("ConversionError: Cannot convert the function '<lambda>' to ONNX Runtime Web (args[0]): "
                            "it is bfloat16, for which onnxruntime-web has no tensor type"), done.stdout
    assert imported == "imported: []" and not (tmp_path / "web").exists()


def test_a_bfloat16_function_is_computed_in_float32_and_takes_and_gives_bfloat16(tmp_path: Path) -> None:
    import ml_dtypes

    def f(x: jax.Array, w: jax.Array) -> jax.Array:
        return jnp.tanh(x @ w) + 1

    bf16 = jnp.bfloat16
    exported = jaxport.export(jax.jit(f))(jax.ShapeDtypeStruct((2, 3), bf16), jax.ShapeDtypeStruct((3, 4), bf16))
    jaxport.to_onnx(exported, tmp_path / "bf16")
    rng = np.random.default_rng(0)
    x, w = (rng.normal(size=s).astype(ml_dtypes.bfloat16) for s in ((2, 3), (3, 4)))
    got = jaxport.load_converted(tmp_path / "bf16")[exported.fun_name](x, w)
    want = np.asarray(jax.jit(f)(x, w))
    assert got.dtype == ml_dtypes.bfloat16
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=1e-2, atol=1e-2)
    if _WEB:  # its bfloat16 ports are float32 in the graph; --web refuses them (tests/e2e/test_web.py)
        (path,) = (tmp_path / "bf16").glob("*.onnx")
        _WEB[0].add_file("bfloat16", path, [x, w], [want], (1e-2, 1e-2))
