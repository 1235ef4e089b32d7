"""What LiteRT cannot run is refused before anything is written, each with a typed error naming the function
and the operation (the plan's refusals by the pipeline, before the converter; the rest by LiteRT's tools); and
what the converter gets from a module in either of JAX's calling styles.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.extend import mlir as jex_mlir
from jax.extend.mlir import ir
from jax.interpreters import mlir
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

import jaxport
from jaxport.domain.artifact.record import ArtifactRecord, EffectRecord
from jaxport.errors import ConversionError, UsageError
from tests.helpers import litert_model as model

pytestmark = model.needs_converter

F32 = jax.ShapeDtypeStruct((4, 3), jnp.float32)
B3 = jax.ShapeDtypeStruct(jaxport.symbolic_shape("b, 3"), jnp.float32)


def record(f: Callable[..., Any], *specs: Any, **kwargs: Any) -> ArtifactRecord:
    return jaxport.export(jax.jit(f), **kwargs)(*specs).record


def with_module(rec: ArtifactRecord, text: str, **changes: Any) -> ArtifactRecord:
    """``rec`` with its module replaced by ``text`` (and ``changes``)."""
    with mlir.make_ir_context():
        module = ir.Module.parse(text)
        blob = bytes(jex_mlir.serialize_portable_artifact(module, "1.15.0", False))
    return dataclasses.replace(rec, mlir_module_serialized=blob, **changes)


def convert(rec: ArtifactRecord, bindings: Sequence[Mapping[str, int]] | None = None,
            quantize: str | None = None) -> list[Any]:
    ins, outs = model.wire_names(rec)
    return model.convert_function("f", rec, input_names=ins, output_names=outs, bindings=bindings, quantize=quantize)


CALLBACK = """module @jit_f {
  func.func public @main(%arg0: tensor<4x3xf32>) -> tensor<4x3xf32> {
    %0 = stablehlo.custom_call @xla_ffi_python_cpu_callback(%arg0) {api_version = 4 : i32, has_side_effect = true} : (tensor<4x3xf32>) -> tensor<4x3xf32>
    return %0 : tensor<4x3xf32>
  }
}"""


def sharded() -> ArtifactRecord:
    mesh = Mesh(np.array(jax.devices()[:2]), ("x",))
    f = jax.jit(lambda x: x * 2, in_shardings=NamedSharding(mesh, P("x")), out_shardings=NamedSharding(mesh, P("x")))
    return jaxport.export(f)(F32).record


KEY = jax.ShapeDtypeStruct((), jax.random.key(0).dtype)

CASES: dict[str, tuple[Callable[[], ArtifactRecord], dict[str, Any], str]] = {
    "unlegalized with symbolic shapes": (
        lambda: record(lambda x: x[:, 0] * 2, jax.ShapeDtypeStruct(jaxport.symbolic_shape("b, 4, 3"), jnp.float32)),
        {}, r"'f' to LiteRT: LiteRT's converter cannot legalize the operation\(s\) 'stablehlo.dynamic_gather'; "
            r"with symbolic shapes \(dimension variables b\).*--dims f:b=8"),
    "operator without a kernel": (lambda: record(lambda x: jnp.sort(x, axis=0), F32), {},
                                  r"'f' to LiteRT: LiteRT's interpreter cannot run the converted model: .*"
                                  r"'STABLEHLO_SORT'"),
    "control flow": (lambda: record(lambda x: jax.lax.fori_loop(0, 3, lambda i, v: v * 2, x), F32), {},
                     r"'f' to LiteRT: LiteRT's flatbuffer exporter refused the converted module "
                     r"\(it holds 'tfl.while'"),
    "lapack": (lambda: record(jnp.linalg.inv, jax.ShapeDtypeStruct((3, 3), jnp.float32)), {},
               r"'f' to LiteRT: its module calls the custom call 'lapack_sgetrf_ffi', a LAPACK kernel of JAX's CPU runtime"),
    "host callback": (lambda: with_module(record(lambda x: x + 1, F32), CALLBACK), {},
                      r"custom call 'xla_ffi_python_cpu_callback', a host callback"),
    "ordered effects": (lambda: dataclasses.replace(record(lambda x: x + 1, F32),
                                                    ordered_effects=(EffectRecord("Printing"),)), {},
                        r"'f' to LiteRT: it has ordered effects \(Printing\)"),
    "several devices": (sharded, {}, r"'f' to LiteRT: its module is for 2 devices"),
    "dtype": (lambda: record(lambda x: x.astype(jnp.float32), jax.ShapeDtypeStruct((4,), jnp.int4)), {},
              r"'f' to LiteRT \(args\[0\]\): int4\[4\] is the dtype int4, for which LiteRT's interpreter takes no NumPy"),
    "key": (lambda: record(lambda k: jax.random.uniform(k, (3,)), KEY), {},
            r"\(args\[0\]\): key<fry>\[\] is a PRNG key array \(key<fry>\): export the function taking jax.random.key_data"),
    "no cpu platform": (lambda: record(lambda x: x + 1, F32, platforms=("cuda",)), {},
                        r"'f' to LiteRT: it was exported for \['cuda'\] only; export it with platforms that include one of \['cpu'\]"),
    "binding against the constraints": (lambda: model.records()["predict"], {"bindings": [{"b": 65}]},
                                        r"'f' to LiteRT: the binding \{'b': 65\} violates its shape constraints"),
    "binding of another variable": (lambda: model.records()["predict"], {"bindings": [{"n": 2}]},
                                    r"the binding \{'n': 2\} names n, which is not among its dimension variables"),
}


@pytest.mark.parametrize("case", CASES)
def test_what_litert_cannot_run_is_refused_naming_the_function_and_why(case: str, tmp_path: Path) -> None:
    make, kwargs, message = CASES[case]
    exported = jaxport.Exported(dataclasses.replace(make(), function_name="f"))
    dims = {"f": kwargs["bindings"]} if "bindings" in kwargs else None
    with pytest.raises(ConversionError, match=message):
        jaxport.convert(exported, tmp_path / "out", to="litert", dims=dims)
    assert not (tmp_path / "out").exists()


def test_what_cannot_stay_dynamic_converts_for_the_sizes_given() -> None:
    from jaxport.adapters.litert.runtime import LiteRtModel

    rec = record(lambda x: x[:, 0] * 2, jax.ShapeDtypeStruct(jaxport.symbolic_shape("b, 4, 3"), jnp.float32))
    variants = convert(rec, [{"b": 2}, {"b": 3}])
    assert [v.dims for v in variants] == [(("b", 2),), (("b", 3),)]
    x = np.arange(36, dtype=np.float32).reshape(3, 4, 3)
    [got] = LiteRtModel(variants[1].model).function("f", ["arg0"], ["output_0"])([x])
    np.testing.assert_array_equal(got, x[:, 0] * 2)


def test_an_unknown_quantization_and_names_that_do_not_fit_are_usage_errors() -> None:
    from jaxport.adapters.litert.converter import convert_function
    from jaxport.domain.targets.litert import LiteRtOptions

    rec = record(lambda x: x + 1, F32)
    with pytest.raises(UsageError, match=r"Unknown quantization 'int4' for LiteRT: give one of \['int8-weights', "):
        LiteRtOptions(quantize="int4")  # checked once, by the options, before any conversion
    with pytest.raises(UsageError, match=r"'f' has 1 flat inputs, and 2 input names were given"):
        convert_function("f", rec, input_names=["a", "b"], output_names=["y"])
    with pytest.raises(UsageError, match=r"'f' was given the output names \['y'\] more than once"):
        convert_function("f", record(lambda x: (x, x), F32), input_names=["a"], output_names=["y", "y"])


# A module as JAX 0.11 and later write a symbolic one: ``main`` takes the value of ``b`` as a leading
# ``tensor<i32> {jax.global_constant = "b"}`` argument (here it sizes a dynamic broadcast).
DIMS_AS_ARGUMENTS = """module @jit_f attributes {jax.uses_shape_polymorphism = true} {
  func.func public @main(%arg0: tensor<i32> {jax.global_constant = "b"}, %arg1: tensor<?x3xf32>) -> tensor<?x3xf32> {
    %c = stablehlo.constant dense<3> : tensor<1xi32>
    %0 = stablehlo.reshape %arg0 : (tensor<i32>) -> tensor<1xi32>
    %1 = stablehlo.concatenate %0, %c, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %cst = stablehlo.constant dense<1.5> : tensor<f32>
    %2 = stablehlo.dynamic_broadcast_in_dim %cst, %1, dims = [] : (tensor<f32>, tensor<2xi32>) -> tensor<?x3xf32>
    %3 = stablehlo.multiply %arg1, %2 : tensor<?x3xf32>
    return %3 : tensor<?x3xf32>
  }
}"""


@pytest.mark.parametrize("bindings, batch", [(None, 4), ([{"b": 2}], 2)], ids=["dynamic", "specialized"])
def test_a_main_that_takes_dimension_values_gets_them_from_the_shapes_or_the_binding(
        bindings: list[dict[str, int]] | None, batch: int) -> None:
    from jaxport.adapters.litert.runtime import LiteRtModel

    rec = with_module(record(lambda x: x * 1.5, B3), DIMS_AS_ARGUMENTS)
    [variant] = convert(rec, bindings)
    assert variant.info.signatures[0].inputs[0].shape_signature == ((-1, 3) if bindings is None else (2, 3))
    x = np.arange(3 * batch, dtype=np.float32).reshape(batch, 3)
    [got] = LiteRtModel(variant.model).function("f", ["arg0"], ["output_0"])([x])
    np.testing.assert_array_equal(got, x * 1.5)


def test_a_dimension_value_with_no_input_to_read_it_from_asks_for_dims() -> None:
    rec = with_module(record(lambda x: x[::2] * 1.5, jax.ShapeDtypeStruct(jaxport.symbolic_shape("2*b, 3"),
                                                                         jnp.float32)),
                      DIMS_AS_ARGUMENTS)
    with pytest.raises(ConversionError, match=r"'f' to LiteRT: its module takes the dimension variable b as a "
                                              r"value, and no input has it alone as a dimension"):
        convert(rec)


def test_a_multi_platform_module_keeps_its_batch_dynamic_from_its_cpu_branch() -> None:
    from jaxport.adapters.litert.runtime import LiteRtModel

    [variant] = convert(record(lambda x: jnp.sum(x, axis=0) * 2, B3, platforms=("cuda", "cpu")))
    assert variant.dynamic == ("b",)
    x = np.ones((5, 3), np.float32)
    [got] = LiteRtModel(variant.model).function("f", ["arg0"], ["output_0"])([x])
    np.testing.assert_array_equal(got, np.full(3, 10.0, np.float32))


LOAD_ORDER = """
import importlib, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
import numpy as np, tensorflow as tf
from jax.extend import mlir as jex_mlir
from jax.extend.mlir import ir
from jax.interpreters import mlir
from jaxport.adapters.litert.stablehlo_to_tflite import to_tflite
from jaxport.adapters.litert.runtime import LiteRtModel
with mlir.make_ir_context():
    module = ir.Module.parse(sys.stdin.read())
    portable = bytes(jex_mlir.serialize_portable_artifact(module, "1.15.0", False))
tflite = to_tflite("f", portable, ["x"], ["y"], symbolic=("b",))
[y] = LiteRtModel(tflite).function("f", ["x"], ["y"])([np.ones((2, 3), np.float32)])
print("ok", float(tf.reduce_sum(tf.constant(y))))
"""

TIMES_TWO = """module @jit_f {
  func.func public @main(%arg0: tensor<?x3xf32>) -> tensor<?x3xf32> {
    %0 = stablehlo.add %arg0, %arg0 : tensor<?x3xf32>
    return %0 : tensor<?x3xf32>
  }
}"""


ORDERS = [("tensorflow", "jax.extend.mlir", "litert_converter.converter_api_ext", "ai_edge_litert.interpreter"),
          ("ai_edge_litert.interpreter", "litert_converter.converter_api_ext", "jax.extend.mlir", "tensorflow")]


def test_litert_jaxlibs_mlir_and_tensorflow_load_and_work_in_one_process_in_either_order() -> None:
    pytest.importorskip("tensorflow", reason="needs the extra jaxport[tf]")
    children = [subprocess.Popen([sys.executable, "-c", LOAD_ORDER, *order], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for order in ORDERS]
    for order, child in zip(ORDERS, children):
        out, err = child.communicate(TIMES_TWO, timeout=300)
        assert child.returncode == 0, (order, err[-3000:])
        assert out.split()[-2:] == ["ok", "12.0"], order
