"""Models beyond the common ones, converted to ONNX and run on ONNX Runtime, equal to ``jax.jit`` at several sizes.

A CNN (strided, dilated, grouped convolutions, max and average pools), a
``lax.scan`` RNN, ``lax.switch`` and ``lax.cond``, ``jnp.sort``/``jnp.argsort``/
``lax.top_k``, an ``x.at[idx].add(v)`` scatter, a bfloat16 and a float16 MLP
(weights stored in their dtype, computed in float32 inside). Each model is
exported, converted and loaded into one ONNX Runtime session once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("onnx", reason="the ONNX tests need the jaxport[onnx] extra (onnx)")
pytest.importorskip("onnxruntime", reason="the ONNX tests need the jaxport[onnx] extra (onnxruntime)")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from jaxport.adapters.onnx.runtime import OnnxRuntimeModel  # noqa: E402
from tests.helpers import onnx_op_models as models  # noqa: E402
from tests.helpers.onnx_convert import WEIGHTS, convert  # noqa: E402
from tests.helpers.onnx_corpus import assert_close  # noqa: E402
from tests.helpers.web_batch import WebBatch, module_batch  # noqa: E402

Loaded = tuple[OnnxRuntimeModel, dict[str, Any], Callable[..., Any], Path]
SAVERS: dict[str, Callable[[Path], models.Saved]] = {
    "cnn": models.save_cnn, "rnn": models.save_rnn, "branches": models.save_branches, "sorting": models.save_sorting,
    "histogram": models.save_histogram, "mlp_bfloat16": lambda p: models.save_mlp(p, jnp.bfloat16),
    "mlp_float16": lambda p: models.save_mlp(p, np.float16),
}


#: The batch of this module's models, with JAX's outputs, to run in onnxruntime-web too (empty: no Node).
_WEB: list[WebBatch] = []


@pytest.fixture(scope="module", autouse=True)
def onnxruntime_web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every model at every size also runs in onnxruntime-web (WebAssembly, under Node) at the module's end,
    compared with the same outputs of ``jax.jit`` and the same tolerances."""
    yield from module_batch(_WEB, tmp_path_factory.mktemp("onnxruntime-web"))


@pytest.fixture(scope="module", params=sorted(SAVERS))
def loaded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Loaded:
    tmp = tmp_path_factory.mktemp(request.param)
    path, params, function = SAVERS[request.param](tmp / "bundle")
    (converted,) = convert(path, tmp / "onnx").values()
    return OnnxRuntimeModel(converted.path, allowed=[WEIGHTS], threads=1), params, function, converted.path


def _inputs(function: Callable[..., Any], b: int, rng: np.random.Generator) -> list[np.ndarray]:
    if function is models.cnn:
        return [rng.normal(size=(b, 16, 16, 3)).astype(np.float32)]
    if function is models.rnn:
        return [rng.normal(size=(b, 7, 5)).astype(np.float32)]
    if function is models.branches:
        return [np.array(b % 5 - 1, np.int32), rng.normal(size=(b, 4)).astype(np.float32)]
    if function is models.sorting:
        return [np.round(rng.normal(size=(b, 6)), 1).astype(np.float32)]
    if function is models.histogram:
        return [rng.integers(-10, 10, size=(b,)).astype(np.int32), rng.normal(size=(b,)).astype(np.float32)]
    return [rng.normal(size=(b, 16)).astype(jnp.bfloat16 if "bfloat16" in str(function) else np.float32)]


@pytest.mark.parametrize("b", [1, 3, 8])
def test_the_model_equals_jax_at_several_sizes(loaded: Loaded, b: int) -> None:
    runtime, params, function, path = loaded
    rng = np.random.default_rng(b)
    args = _inputs(function, b, rng)
    if function is models.mlp:
        dtype = params["w0"].dtype
        args = [args[0].astype(dtype)]
    want = [np.asarray(w) for w in jax.tree.leaves(jax.jit(function)(params, *args))]
    tolerance = 5e-2 if function is models.mlp else 1e-4
    if _WEB:
        _WEB[0].add_file(f"{path.parent.parent.name} b={b}", path, args, want, (tolerance, tolerance))
    assert_close(runtime.run(args), want, tolerance)
