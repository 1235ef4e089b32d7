"""End to end: bundles and artifacts translated to ONNX, run on ONNX Runtime, compared with ``jax.jit`` at several sizes.

Each model is exported and converted once (module fixtures); each ONNX
Runtime session is made once per model. One model serves every size of
its symbolic dimensions: the ``.onnx`` keeps them as ``dim_param``s.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("onnx", reason="the ONNX tests need the jaxport[onnx] extra (onnx)")
pytest.importorskip("onnxruntime", reason="the ONNX tests need the jaxport[onnx] extra (onnxruntime)")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import onnx  # noqa: E402

import jaxport  # noqa: E402
from jaxport.adapters.onnx.runtime import OnnxRuntimeModel, check_external_data  # noqa: E402
from jaxport.adapters.onnx.check import check_file  # noqa: E402
from jaxport.adapters.onnx.translate import translate  # noqa: E402
from jaxport.errors import UnsupportedOperationError  # noqa: E402
from tests.helpers import onnx_models as models  # noqa: E402
from tests.helpers.onnx_convert import WEIGHTS, Converted, convert, with_module  # noqa: E402
from tests.helpers.web_batch import WebBatch, module_batch  # noqa: E402

Model = tuple[Converted, OnnxRuntimeModel, Any]

#: The batch of this module's models, with JAX's outputs, to run in onnxruntime-web too (empty: no Node).
_WEB: list[WebBatch] = []


@pytest.fixture(scope="module", autouse=True)
def onnxruntime_web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every model this module compares with JAX also runs in onnxruntime-web (WebAssembly, under Node) at the
    module's end, compared with the same outputs of ``jax.jit`` and the same tolerances."""
    yield from module_batch(_WEB, tmp_path_factory.mktemp("onnxruntime-web"))


def _load(tmp: Path, saved: tuple[Path, Any]) -> Model:
    path, params = saved
    (converted,) = convert(path, tmp / "onnx").values()
    return converted, OnnxRuntimeModel(converted.path, allowed=[WEIGHTS]), params


@pytest.fixture(scope="module")
def mlp_functions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Model]:
    tmp = tmp_path_factory.mktemp("mlp")
    path, params = models.save_mlp(tmp / "bundle")
    converted = convert(path, tmp / "onnx")
    return {name: (c, OnnxRuntimeModel(c.path, allowed=[WEIGHTS]), params) for name, c in converted.items()}


@pytest.fixture(scope="module")
def mlp(mlp_functions: dict[str, Model]) -> Model:
    return mlp_functions["predict"]


@pytest.fixture(scope="module")
def gpt(tmp_path_factory: pytest.TempPathFactory) -> Model:
    tmp = tmp_path_factory.mktemp("gpt")
    return _load(tmp, models.save_gpt(tmp / "bundle"))


@pytest.fixture(scope="module")
def bert(tmp_path_factory: pytest.TempPathFactory) -> Model:
    tmp = tmp_path_factory.mktemp("bert")
    return _load(tmp, models.save_bert(tmp / "bundle"))


def _check(model: Model, function: Callable[..., Any], args: list[np.ndarray]) -> None:
    converted, runtime, params = model
    got = runtime.run(args)
    want = jax.tree.leaves(jax.jit(function)(params, *args))
    if _WEB:
        _WEB[0].add_file(f"{function.__name__} {[a.shape for a in args]}", converted.path, args,
                         [np.asarray(w) for w in want], (1e-4, 2e-5))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-4, atol=2e-5)


@pytest.mark.parametrize("b", [1, 4, 33])
def test_an_mlp_with_a_symbolic_batch_equals_jax(mlp: Model, b: int) -> None:
    x = np.random.default_rng(b).normal(size=(b, 16)).astype(np.float32)
    _check(mlp, models.mlp, [x])


@pytest.mark.parametrize("b", [1, 6])
def test_the_bundles_loss_function_shares_the_weights_file_and_equals_jax(mlp_functions: dict[str, Model],
                                                                          b: int) -> None:
    rng = np.random.default_rng(b)
    x, labels = rng.normal(size=(b, 16)).astype(np.float32), rng.integers(0, 5, size=b).astype(np.int32)
    _check(mlp_functions["loss"], models.mlp_loss, [x, labels])
    assert {c.path.parent for c, _, _ in mlp_functions.values()} == {mlp_functions["loss"][0].path.parent}


@pytest.mark.parametrize(("b", "t"), [(1, 1), (2, 7), (3, 40)])
def test_a_gpt2_like_decoder_with_symbolic_batch_and_length_equals_jax(gpt: Model, b: int, t: int) -> None:
    tokens = np.random.default_rng(t).integers(0, 97, size=(b, t)).astype(np.int32)
    _check(gpt, models.gpt, [tokens])


@pytest.mark.parametrize(("b", "t"), [(1, 3), (2, 9), (4, 24)])
def test_a_bert_like_encoder_with_a_padding_mask_equals_jax(bert: Model, b: int, t: int) -> None:
    rng = np.random.default_rng(b * t)
    tokens = rng.integers(0, 101, size=(b, t)).astype(np.int32)
    mask = (np.arange(t)[None, :] < rng.integers(1, t + 1, size=(b, 1))).astype(np.int32)
    _check(bert, models.bert, [tokens, mask])


CHILD = """
import sys
import numpy as np
from jaxport.adapters.onnx.runtime import OnnxRuntimeModel
model, tokens, out = sys.argv[1:]
np.save(out, OnnxRuntimeModel(model, allowed=["params.safetensors"]).run([np.load(tokens)])[0])
print(sorted(m for m in ("jax", "jaxlib", "tensorflow") if m in sys.modules))
"""


def test_the_decoder_runs_in_a_process_that_never_imports_jax(gpt: Model, tmp_path: Path) -> None:
    converted, _, params = gpt
    tokens = np.random.default_rng(5).integers(0, 97, size=(2, 11)).astype(np.int32)
    np.save(tmp_path / "tokens.npy", tokens)
    done = subprocess.run([sys.executable, "-c", CHILD, str(converted.path), str(tmp_path / "tokens.npy"),
                           str(tmp_path / "out.npy")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), np.asarray(jax.jit(models.gpt)(params, tokens)),
                               rtol=1e-4, atol=2e-5)


def test_symbolic_dimensions_stay_dim_params_named_after_the_variables(gpt: Model) -> None:
    converted, runtime, _ = gpt
    model = onnx.load(str(converted.path), load_external_data=False)
    dims = [[d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]
            for v in (*model.graph.input, *model.graph.output)]
    assert dims == [["b", "t"], ["b", "t", 97]]
    assert (model.ir_version, [(o.domain, o.version) for o in model.opset_import]) == (10, [("", 21)])
    assert all(n.domain == "" for n in model.graph.node)
    assert f"{model.producer_name} {model.producer_version}" == "jaxport test"
    found = check_external_data(converted.path, [WEIGHTS])
    assert found.metadata == {"source": "tests"}
    initializers = {t.name for t in model.graph.initializer}  # the standard-library reader agrees with onnx's
    assert [n for n in found.inputs if n not in initializers] == [
        i.name for i in model.graph.input if i.name not in initializers]
    assert found.outputs == [o.name for o in model.graph.output]
    assert sorted(t.name for t in found.external) == sorted(
        t.name for t in model.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL)


def test_every_weight_is_external_data_at_its_offset_in_the_safetensors_file(gpt: Model) -> None:
    converted, _, params = gpt
    model = onnx.load(str(converted.path), load_external_data=False)
    weights = [t for t in model.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
    assert len(weights) == len(jax.tree.leaves(params))
    data = (converted.path.parent / WEIGHTS).read_bytes()
    flat = dict(zip([w.name for w in weights], weights))
    wte = flat["wte"]
    entry = {e.key: e.value for e in wte.external_data}
    start, length = int(entry["offset"]), int(entry["length"])
    assert entry["location"] == WEIGHTS
    np.testing.assert_array_equal(np.frombuffer(data[start:start + length], np.float32).reshape(97, 32),
                                  params["wte"])
    assert all(t.data_location == onnx.TensorProto.EXTERNAL or t.ByteSize() < 4096 for t in model.graph.initializer)
    check_file(converted.path, "logits")


def test_a_static_function_with_dict_outputs_equals_jax(tmp_path: Path) -> None:
    (converted,) = convert(models.save_stats(tmp_path / "stats.jaxport"), tmp_path / "onnx").values()
    runtime = OnnxRuntimeModel(converted.path)
    rng = np.random.default_rng(0)
    x, y = (rng.normal(size=(5, 3)).astype(np.float32) for _ in range(2))
    got = runtime.run([x, y])
    want = jax.tree.leaves(jax.jit(models.stats)(x, y))
    if _WEB:
        _WEB[0].add_file("stats", converted.path, [x, y], [np.asarray(w) for w in want], (1e-6, 1e-6))
    assert [g.dtype for g in got] == [np.asarray(w).dtype for w in want]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-6, atol=1e-6)


def _refused(tmp_path: Path, function: Callable[..., Any], *args: Any, **options: Any) -> UnsupportedOperationError:
    exp = jaxport.export(jax.jit(function), **options)(*args)
    with pytest.raises(UnsupportedOperationError) as info:
        convert(exp, tmp_path)
    assert info.value.function == exp.fun_name
    assert "test_onnx_models.py:" in info.value.location
    return info.value


def test_an_integer_convolution_too_wide_for_conv_integer_is_refused_naming_the_operation_and_where(
        tmp_path: Path) -> None:
    image = jax.ShapeDtypeStruct((1, 4000, 8, 8), jnp.int32)
    kernel = jax.ShapeDtypeStruct((4, 4000, 3, 3), jnp.int32)
    error = _refused(tmp_path, lambda x, k: jax.lax.conv(x, k, (1, 1), "SAME"), image, kernel)
    assert error.operation == "stablehlo.convolution"
    assert "stablehlo.convolution" in str(error) and "test_onnx_models.py" in str(error)


def test_a_sort_too_long_for_its_quadratic_form_is_refused(tmp_path: Path) -> None:
    long = jax.ShapeDtypeStruct((70000,), jnp.float32)
    error = _refused(tmp_path, lambda x, y: jax.lax.sort((x, y), num_keys=2), long, long)
    assert error.operation == "stablehlo.sort"


def test_a_lapack_custom_call_is_refused(tmp_path: Path) -> None:
    error = _refused(tmp_path, lambda x: jnp.linalg.svd(x), jax.ShapeDtypeStruct((3, 3), jnp.float32))
    assert error.operation.startswith("stablehlo.custom_call @lapack_")


CALLBACK = """module @jit_f {
  func.func public @main(%arg0: tensor<3xf32>) -> tensor<3xf32> {
    %0 = stablehlo.custom_call @xla_ffi_python_cpu_callback(%arg0) {api_version = 4 : i32, has_side_effect = true} : (tensor<3xf32>) -> tensor<3xf32>
    return %0 : tensor<3xf32>
  }
}"""


def test_a_host_callback_is_refused() -> None:
    # jaxport.export refuses host callbacks, as jax.export does: such a module comes from elsewhere.
    exp = jaxport.export(jax.jit(jnp.sin))(jax.ShapeDtypeStruct((3,), jnp.float32))
    record = with_module(exp.record, CALLBACK)
    with pytest.raises(UnsupportedOperationError, match="stablehlo.custom_call @xla_ffi_python_cpu_callback"):
        translate(record, input_names=["x"], output_names=["y"])
