"""End to end: jaxport's artifacts converted to LiteRT models and run in LiteRT, equal to ``jax.jit`` at several sizes.

Each model converts once per test process (``tests.helpers.litert_model``
caches the conversions). The float32 tolerance is the documented
:data:`jaxport.domain.targets.litert.FLOAT32_TOLERANCE`, which holds with and
without XNNPACK (which picks its kernels by the CPU's instruction set); the
quantized model's is :data:`jaxport.domain.targets.litert.INT8_WEIGHTS_TOLERANCE`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport
from jaxport.domain.targets.litert import INT8_WEIGHTS_TOLERANCE
from tests.helpers import iree_model
from tests.helpers import litert_model as model
from tests.helpers.litert_model import assert_close

pytestmark = model.needs_converter


def run(name: str, *args: np.ndarray, variant: int = 0, quantize: str | None = None,
        xnnpack: bool = True) -> list[np.ndarray]:
    from jaxport.adapters.litert.runtime import LiteRtModel

    ins, outs = model.names(name)
    converted = model.converted(name, quantize)[variant]
    return LiteRtModel(converted.model, xnnpack=xnnpack).function(name, ins, outs)(list(args))


@pytest.mark.parametrize("xnnpack", [True, False], ids=["xnnpack", "builtin-kernels"])
@pytest.mark.parametrize("batch", [1, 3, 64])
def test_predict_over_token_ids_keeps_its_batch_dynamic_and_equals_jax_at_every_size(batch: int, xnnpack: bool) -> None:
    [variant] = model.converted("predict")
    assert variant.dynamic == ("b",) and variant.dims == ()
    [signature] = variant.info.signatures
    assert signature.key == "predict"
    assert [(t.name, t.dtype, t.shape_signature) for t in signature.inputs] == [("arg0", "int32", (-1, 8))]
    assert [(t.name, t.shape_signature) for t in signature.outputs] == [("output_0", (-1, 8, 32))]
    ids = iree_model.token_ids(batch)
    assert_close(run("predict", ids, xnnpack=xnnpack), model.expected("predict", ids))


def test_the_weights_are_constants_that_litert_fuses_into_fully_connected_layers() -> None:
    [variant] = model.converted("predict")
    operators = {builtin for builtin, _ in variant.info.operators}
    assert "FULLY_CONNECTED" in operators and "GATHER" in operators
    weight_bytes = sum(w.nbytes for w in model.transformer_weights())
    assert weight_bytes <= variant.info.constant_bytes < weight_bytes + 64 * 1024
    assert len(variant.model) > weight_bytes


@pytest.mark.parametrize("index, batch", [(0, 2), (1, 5)])
def test_loss_is_converted_once_per_binding_and_equals_jax(index: int, batch: int) -> None:
    variants = model.converted("loss")
    assert [v.dims for v in variants] == [(("b", 2),), (("b", 5),)]
    assert variants[index].dynamic == ()
    assert variants[index].info.signatures[0].inputs[0].shape_signature == (batch, 8)
    ids = iree_model.token_ids(batch)
    targets = iree_model.token_ids(batch, seed=7)
    assert_close(run("loss", ids, targets, variant=index), model.expected("loss", ids, targets))


@pytest.mark.parametrize("batch", [1, 4])
def test_a_cnn_converts_to_convolution_and_max_pooling_with_a_dynamic_batch(batch: int) -> None:
    [variant] = model.converted("cnn")
    operators = {builtin for builtin, _ in variant.info.operators}
    assert {"MAX_POOL_2D", "FULLY_CONNECTED"} <= operators
    assert operators & {"CONV_2D", "DEPTHWISE_CONV_2D"}
    assert variant.info.signatures[0].inputs[0].shape_signature == (-1, 8, 8, 1)
    x = model.images(batch)
    assert_close(run("cnn", x), model.expected("cnn", x))


def test_a_static_multi_platform_artifact_with_a_dict_result_converts_from_its_cpu_branch() -> None:
    [variant] = model.converted("stats")
    assert variant.dims == () and variant.dynamic == ()
    [signature] = variant.info.signatures
    assert [t.name for t in signature.outputs] == ["max", "mean", "norm/l2"]
    assert [t.shape_signature for t in signature.outputs] == [(3,), (3,), ()]
    assert_close(run("stats", iree_model.STATS_INPUT), model.expected("stats", iree_model.STATS_INPUT))


@pytest.mark.parametrize("batch", [1, 16])
def test_int8_weights_are_within_their_tolerance_and_smaller_on_disk(batch: int) -> None:
    [float32] = model.converted("mlp")
    [quantized] = model.converted("mlp", "int8-weights")
    assert len(quantized.model) < 0.35 * len(float32.model)
    x = model.mlp_inputs(batch)
    want = model.expected("mlp", x)
    assert_close(run("mlp", x), want)
    got = run("mlp", x, quantize="int8-weights")
    assert_close(got, want, INT8_WEIGHTS_TOLERANCE)
    with pytest.raises(AssertionError, match="beyond rtol"):  # the weights were quantized indeed
        assert_close(got, want)


def test_a_scalar_input_reaches_litert_as_a_scalar() -> None:
    # Made an array of one element (rank 1), a scalar input resized the model: its scalar result
    # came back with shape (1,).
    from jaxport.adapters.litert.runtime import LiteRtModel

    def append(x: jax.Array, s: jax.Array) -> tuple[jax.Array, jax.Array]:
        return jnp.concatenate([x, s[None]]), s * 2

    record = jaxport.export(jax.jit(append))(jax.ShapeDtypeStruct((2,), jnp.float32),
                                             jax.ShapeDtypeStruct((), jnp.float32)).record
    ins, outs = model.wire_names(record)
    [converted] = model.convert_function("append", record, input_names=ins, output_names=outs)
    call = LiteRtModel(converted.model).function("append", ins, outs)
    y, twice = call([np.array([3.0, 4.0], np.float32), np.array(1.5, np.float32)])
    np.testing.assert_array_equal(y, [3.0, 4.0, 1.5])
    assert twice.shape == () and twice == 3.0


def test_a_scalar_weight_converts_as_a_scalar_constant() -> None:
    # Made an array of one element, a scalar weight's constant no longer fit its uses (an untyped
    # MLIRError from the conversion).
    from jaxport.adapters.litert.runtime import LiteRtModel

    def affine(p: tuple[jax.Array, jax.Array], x: jax.Array) -> jax.Array:
        return x * p[0] + p[1]

    weights = [np.array(2.0, np.float32), np.arange(3, dtype=np.float32)]
    specs = tuple(jax.ShapeDtypeStruct(w.shape, w.dtype) for w in weights)
    record = jaxport.export(jax.jit(affine))(specs, jax.ShapeDtypeStruct((2, 3), jnp.float32)).record
    ins, outs = model.wire_names(record, len(weights))
    [converted] = model.convert_function("affine", record, weights=weights, input_names=ins, output_names=outs)
    [y] = LiteRtModel(converted.model).function("affine", ins, outs)([np.ones((2, 3), np.float32)])
    np.testing.assert_array_equal(y, [[2.0, 3.0, 4.0]] * 2)
