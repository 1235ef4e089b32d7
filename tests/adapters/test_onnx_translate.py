"""The ONNX translation operation by operation: each case exported, translated, run on ONNX Runtime, compared with JAX.

Cases are small functions that produce the operation (and the form of its
attributes) under test, static and with symbolic dimensions; integers and
booleans must be equal, floats within float32 rounding.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pytest

pytest.importorskip("onnx", reason="the ONNX tests need the jaxport[onnx] extra (onnx)")
pytest.importorskip("onnxruntime", reason="the ONNX tests need the jaxport[onnx] extra (onnxruntime)")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from jax import lax  # noqa: E402

import jaxport  # noqa: E402
from jaxport.adapters.mlir.module import module_text  # noqa: E402
from jaxport.adapters.onnx.translate import translate  # noqa: E402
from jaxport.errors import ConversionError, UnsupportedOperationError  # noqa: E402
from tests.helpers.onnx_convert import with_module  # noqa: E402
from tests.helpers.web_batch import WebBatch, module_batch  # noqa: E402

F32 = jnp.float32
b, t = jaxport.symbolic_shape("b, t")
short, = jaxport.symbolic_shape("s", constraints=("s <= 8",))


def spec(shape: Sequence[Any], dtype: Any = F32) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(tuple(shape), dtype)


def to_onnx(function: Callable[..., Any], *specs: jax.ShapeDtypeStruct) -> onnx.ModelProto:
    record = jaxport.export(jax.jit(function))(*specs).record
    return translate(record, input_names=[f"in{i}" for i in range(len(record.in_avals))],
                     output_names=[f"out{j}" for j in range(len(record.out_avals))])


#: The batch of this module's models, with JAX's outputs, to run in onnxruntime-web too (empty: no Node).
_WEB: list[WebBatch] = []


@pytest.fixture(scope="module", autouse=True)
def onnxruntime_web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every model that a case compares with JAX also runs in onnxruntime-web (WebAssembly, under Node),
    all in one Node process at the module's end (skipped, silently, where Node or the npm packages are
    missing: tests/e2e/test_web.py says so)."""
    yield from module_batch(_WEB, tmp_path_factory.mktemp("onnxruntime-web"))


def run(model: onnx.ModelProto, args: Sequence[np.ndarray]) -> list[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return [np.asarray(r) for r in session.run(None, {f"in{i}": a for i, a in enumerate(args)})]


def assert_same(function: Callable[..., Any], specs: Sequence[jax.ShapeDtypeStruct],
                *arg_sets: Sequence[np.ndarray]) -> onnx.ModelProto:
    model = to_onnx(function, *specs)
    for args in arg_sets:
        got = run(model, args)
        want = [np.asarray(w) for w in jax.tree.leaves(jax.jit(function)(*args))]
        if _WEB:
            _WEB[0].add(getattr(function, "__name__", "case"), model.SerializeToString(),
                        {f"in{i}": a for i, a in enumerate(args)}, {f"out{j}": w for j, w in enumerate(want)})
        assert [g.shape for g in got] == [w.shape for w in want]
        assert [g.dtype for g in got] == [w.dtype for w in want]
        for g, w in zip(got, want):
            if w.dtype.kind == "f":
                np.testing.assert_allclose(g, w, rtol=2e-6, atol=2e-6)
            else:
                np.testing.assert_array_equal(g, w)
    return model


def ops(model: onnx.ModelProto) -> set[str]:
    return {n.op_type for n in model.graph.node}


rng = np.random.default_rng(0)


def normal(*shape: int) -> np.ndarray:
    return rng.normal(size=shape).astype(np.float32)


DOTS: dict[str, tuple[str, tuple[int, ...], tuple[int, ...], str]] = {
    "matmul": ("ij,jk->ik", (4, 5), (5, 3), "MatMul"),
    "transposed right side, 2-D": ("ij,kj->ik", (4, 5), (3, 5), "Gemm"),
    "transposed right side, 3-D": ("bij,kj->bik", (2, 4, 5), (3, 5), "Gemm"),
    "batched": ("bij,bjk->bik", (2, 4, 5), (2, 5, 3), "MatMul"),
    "attention scores": ("bhtd,bhsd->bhts", (2, 3, 4, 5), (2, 3, 6, 5), "MatMul"),
    "contraction first on the left": ("ki,kj->ij", (5, 4), (5, 3), "MatMul"),
    "matrix-vector": ("ij,j->i", (4, 5), (5,), "MatMul"),
    "vector-matrix": ("j,jk->k", (5,), (5, 3), "MatMul"),
    "two contractions": ("abc,cbd->ad", (2, 3, 4), (4, 3, 5), "Einsum"),
    "outer product": ("i,j->ij", (4,), (3,), "Einsum"),
    "batch dimension in the middle": ("ibj,jbk->bik", (4, 2, 5), (5, 2, 3), "Einsum"),
}


@pytest.mark.parametrize("case", DOTS)
def test_dot_general_of_every_dimension_numbers_equals_jax(case: str) -> None:
    equation, lhs, rhs, expected = DOTS[case]
    model = assert_same(lambda x, y: jnp.einsum(equation, x, y), [spec(lhs), spec(rhs)], [normal(*lhs), normal(*rhs)])
    assert expected in ops(model)


@pytest.mark.parametrize("dtype", [jnp.int8, jnp.uint8, jnp.int16, jnp.int32, jnp.uint32])
def test_integer_products_and_sums_wrap_as_jax_does(dtype: Any) -> None:
    x = (np.arange(-30, 30).reshape(6, 10) * 7).astype(dtype)
    big = np.full((6, 10), np.iinfo(dtype).max - 3, dtype)
    assert_same(lambda a, c: (a @ c.T, jnp.einsum("ij,ij->i", a, c), a.sum(0, dtype=dtype), c.sum(1, dtype=dtype),
                              a.max(0), c.min(1)), [spec((6, 10), dtype)] * 2, [x, x[::-1]], [x, big])


def test_a_symbolic_batch_keeps_matmul_and_its_dim_param() -> None:
    model = assert_same(lambda x, w: jnp.tanh(x @ w.T), [spec((b, 5)), spec((3, 5))],
                        [normal(1, 5), normal(3, 5)], [normal(7, 5), normal(3, 5)])
    assert "Gemm" in ops(model) or "MatMul" in ops(model)
    assert [d.dim_param or d.dim_value for d in model.graph.output[0].type.tensor_type.shape.dim] == ["b", 3]


REDUCTIONS: dict[str, tuple[Callable[[Any], Any], Any]] = {
    "sum": (lambda x: x.sum(axis=(0, 2)), F32),
    "max": (lambda x: x.max(axis=1), F32),
    "min": (lambda x: x.min(axis=-1), F32),
    "product": (lambda x: jnp.prod(x, axis=0), F32),
    "integer sum": (lambda x: x.sum(axis=1), jnp.int32),
    "integer min": (lambda x: x.min(axis=1), jnp.int8),
    "integer max": (lambda x: x.max(axis=(0, 1)), jnp.int32),
    "all": (lambda x: (x > 0).all(axis=1), F32),
    "any": (lambda x: (x > 0).any(axis=(0, 2)), F32),
    "mean and variance": (lambda x: (x.mean(-1), x.var(-1)), F32),
    "with a non-identity init": (lambda x: lax.reduce(x, np.float32(2.5), lax.max, (1,)), F32),
}


@pytest.mark.parametrize("case", REDUCTIONS)
def test_reductions_equal_jax(case: str) -> None:
    function, dtype = REDUCTIONS[case]
    x = (normal(3, 4, 5) * 3).astype(dtype)
    assert_same(function, [spec((3, 4, 5), dtype)], [x])


def test_maximum_and_minimum_propagate_nan_as_xla_does() -> None:
    x = normal(3, 4)
    x[1, 2] = np.nan
    assert_same(lambda x: (x.max(axis=1), x.min(axis=0), x.max(), jax.nn.relu(x), jnp.minimum(x, 0.5)),
                [spec((3, 4))], [x])


def test_reductions_with_a_symbolic_dimension() -> None:
    assert_same(lambda x: (x.sum(0), x.max(1), x.mean()), [spec((b, 4))], [normal(1, 4)], [normal(6, 4)])


GATHERS: dict[str, tuple[Callable[..., Any], list[jax.ShapeDtypeStruct], list[np.ndarray]]] = {
    "take along 0, clamped": (lambda x, i: jnp.take(x, i, axis=0, mode="clip"),
                              [spec((6, 4)), spec((3, 2), jnp.int32)],
                              [normal(6, 4), np.array([[0, 5], [-3, 9], [2, 6]], np.int32)]),
    "take with unsigned and narrow indices": (lambda x, i, j: (jnp.take(x, i, axis=0, mode="clip"), x[j]),
                                              [spec((6, 4)), spec((3,), jnp.uint32), spec((2,), jnp.int8)],
                                              [normal(6, 4), np.array([0, 5, 9], np.uint32), np.array([-1, 3], np.int8)]),
    "take along 1": (lambda x, i: jnp.take(x, i, axis=1, mode="clip"),
                     [spec((3, 6, 2)), spec((4,), jnp.int32)], [normal(3, 6, 2), np.array([5, 0, 2, 2], np.int32)]),
    "embedding lookup": (lambda e, i: e[i], [spec((10, 4)), spec((2, 3), jnp.int32)],
                         [normal(10, 4), np.array([[1, 9, 0], [3, 3, 4]], np.int32)]),
    "take, out of range filled": (lambda x, i: jnp.take(x, i, axis=0), [spec((6, 4)), spec((3,), jnp.int32)],
                                  [normal(6, 4), np.array([1, 6, -7], np.int32)]),
    "x[:, 0]": (lambda x: x[:, 0], [spec((3, 5, 2))], [normal(3, 5, 2)]),
    "x[:, -1] symbolic": (lambda x: x[:, -1], [spec((b, t, 2))], [normal(2, 5, 2)]),
    "x[:, i] with 2-D indices, symbolic": (lambda x, i: x[:, i], [spec((b, t, 5)), spec((2, 2), jnp.int32)],
                                          [normal(4, 6, 5), np.array([[0, 5], [3, 9]], np.int32)]),
    "x[..., i]": (lambda x, i: x[..., i], [spec((4, 6, 5)), spec((2, 2), jnp.int32)],
                  [normal(4, 6, 5), np.array([[0, 4], [3, 1]], np.int32)]),
    "x[:, -2:] symbolic": (lambda x: x[:, -2:], [spec((b, t, 5))], [normal(3, 4, 5)]),
    "take_along_axis, last axis, symbolic": (lambda x, i: jnp.take_along_axis(x, i[..., None], axis=-1),
                                             [spec((b, 7, 5)), spec((b, 7), jnp.int32)],
                                             [normal(2, 7, 5), np.arange(14, dtype=np.int32).reshape(2, 7) % 5]),
    "take_along_axis, middle axis, clamped": (lambda x, i: jnp.take_along_axis(x, i, axis=1, mode="clip"),
                                              [spec((3, 7, 5)), spec((3, 2, 5), jnp.int32)],
                                              [normal(3, 7, 5), np.arange(-8, 22, dtype=np.int32).reshape(3, 2, 5)]),
    "x[:t] of a table": (lambda e, x: e[:x.shape[0]] + x, [spec((8, 3)), spec((short, 3))],
                         [normal(8, 3), normal(5, 3)]),
}


@pytest.mark.parametrize("case", GATHERS)
def test_gathers_of_take_embedding_and_indexing_equal_jax(case: str) -> None:
    function, specs, args = GATHERS[case]
    assert_same(function, specs, args)


ELEMENTWISE: dict[str, Callable[..., Any]] = {
    "arithmetic": lambda x, y: (x + y, x - y, x * y, x / y, jnp.maximum(x, y), jnp.minimum(x, y), -x),
    "math": lambda x, y: (jnp.exp(x), jnp.log(jnp.abs(x) + 1), jnp.tanh(x), jax.nn.sigmoid(x),
                          jnp.sqrt(jnp.abs(y)), lax.rsqrt(jnp.abs(y) + 1), jnp.sin(x), jnp.cos(x), lax.logistic(x)),
    "rounding": lambda x, y: (jnp.floor(x), jnp.ceil(x), jnp.round(x * 4), jnp.abs(x)),
    "power and remainder": lambda x, y: (jnp.abs(x) ** y, jnp.fmod(x, y), lax.rem(x, y)),
    "trigonometric and hyperbolic": lambda x, y: (jnp.tan(x / 4), jnp.sinh(x), jnp.cosh(y), jnp.arcsin(jnp.tanh(x)),
                                                  jnp.arccos(jnp.tanh(y))),
    "erf and gelu": lambda x, y: (lax.erf(x), jax.nn.gelu(x, approximate=False), jax.nn.gelu(y)),
    "softmax and layer norm": lambda x, y: (jax.nn.softmax(x, axis=-1), jax.nn.standardize(y, axis=-1)),
    "comparisons and select": lambda x, y: (x < y, x <= y, x == y, x != y, x > y, x >= y,
                                            jnp.where(x > y, x, y), jnp.where(x > 0, x > y, x < y)),
    "conversions": lambda x, y: ((x > 0).astype(F32), (x > 0).astype(jnp.int32).astype(F32) * y,
                                 jnp.isfinite(x / (y - y))),
    "logic": lambda x, y: ((x > 0) & (y > 0), (x > 0) | (y > 0), (x > 0) ^ (y > 0), ~(x > 0)),
}


@pytest.mark.parametrize("case", ELEMENTWISE)
def test_elementwise_operations_equal_jax(case: str) -> None:
    x, y = normal(3, 4) * 2, normal(3, 4) + 0.1
    assert_same(ELEMENTWISE[case], [spec((3, 4)), spec((3, 4))], [x, y])


SHAPES: dict[str, tuple[Callable[..., Any], list[jax.ShapeDtypeStruct], list[list[np.ndarray]]]] = {
    "static": (lambda x: (x.reshape(2, 12), x.T, x[1:3, ::2], jnp.concatenate([x, x * 2], axis=1),
                          jnp.broadcast_to(x[:, None, :], (4, 5, 6)), jnp.arange(6) * x[0],
                          lax.broadcast_in_dim(x, (6, 3, 4), (2, 0)), jnp.tril(x), jnp.float32(3.0) * x),
               [spec((4, 6))], [[normal(4, 6)]]),
    "symbolic": (lambda x: (x.reshape(-1, 2), jnp.concatenate([x, x], axis=0), x[:, 1:], x.T,
                            jnp.arange(x.shape[0]), jnp.broadcast_to(x[:, :1], x.shape) + x,
                            jnp.tril(jnp.ones((x.shape[0], x.shape[0]))), x.reshape(x.shape[0], 2, 2),
                            x[::2], lax.slice(x, (1, 0), (x.shape[0], 4), (2, 1)), x[:x.shape[0] - 1]),
                 [spec((b, 4))], [[normal(2, 4)], [normal(5, 4)]]),
    "two symbolic dimensions": (lambda x, y: (x @ y, x.reshape(-1), jnp.concatenate([x, y.T], axis=1)),
                                [spec((b, t)), spec((t, b))], [[normal(2, 3), normal(3, 2)], [normal(1, 1), normal(1, 1)]]),
}


@pytest.mark.parametrize("case", SHAPES)
def test_shape_operations_static_and_symbolic_equal_jax(case: str) -> None:
    function, specs, arg_sets = SHAPES[case]
    assert_same(function, specs, *arg_sets)


def test_a_main_that_takes_dimension_values_as_arguments_is_translated() -> None:
    # JAX 0.11 and later: main takes `tensor<i32> {jax.global_constant = "b"}` first, as its callees
    # already do in 0.10: the callee made main gives that module style on this JAX.
    record = jaxport.export(jax.jit(lambda x, y: (x * x.shape[0], jnp.concatenate([x, y[None].repeat(x.shape[0], 0)],
                                                                                   axis=1))))(
        spec((b, 3)), spec((t,))).record
    text = module_text(record.mlir_module_serialized)
    text = re.sub(r"func\.func public @main\(.*?\n  \}[^\n]*\n", "", text, count=1, flags=re.S)
    text = text.replace("func.func private @_wrapped_jax_export_main", "func.func public @main")
    signature = text.split("@main", 1)[1].split("\n", 1)[0]
    assert '{jax.global_constant = "b"}' in signature and '{jax.global_constant = "t"}' in signature
    model = translate(with_module(record, text), input_names=["x", "y"], output_names=["p", "c"])
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for n, m in ((1, 2), (4, 1), (3, 5)):
        x, y = normal(n, 3), normal(m)
        p, c = session.run(None, {"x": x, "y": y})
        np.testing.assert_allclose(p, x * n, rtol=1e-6)
        np.testing.assert_array_equal(c, np.concatenate([x, np.repeat(y[None], n, 0)], axis=1))


def test_a_variable_of_a_dimension_expression_is_computed_as_jaxports_plan_computes_it() -> None:
    n, = jaxport.symbolic_shape("n")
    record = jaxport.export(jax.jit(lambda x: jnp.zeros(((x.shape[0] - 1) // 2, 2)) + x.max()))(
        spec((2 * n + 1, 3))).record
    text = module_text(record.mlir_module_serialized)
    text = re.sub(r"func\.func public @main\(.*?\n  \}[^\n]*\n", "", text, count=1, flags=re.S)
    text = text.replace("func.func private @_wrapped_jax_export_main", "func.func public @main")
    model = translate(with_module(record, text), input_names=["x"], output_names=["y"])
    assert [d.dim_param for d in model.graph.input[0].type.tensor_type.shape.dim] == ["2*n + 1", ""]
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for rows in (3, 9):
        x = normal(rows, 3)
        (y,) = session.run(None, {"x": x})
        np.testing.assert_array_equal(y, np.full(((rows - 1) // 2, 2), x.max(), np.float32))


def test_the_model_carries_opset_ir_version_producer_and_metadata() -> None:
    record = jaxport.export(jax.jit(jnp.sin))(spec((3,))).record
    model = translate(record, input_names=["x"], output_names=["y"], metadata={"source_sha256": "ab" * 32},
                      producer_version="0.1.0", opset=22, ir_version=10)
    assert (model.ir_version, model.opset_import[0].version, model.opset_import[0].domain) == (10, 22, "")
    assert (model.producer_name, model.producer_version) == ("jaxport", "0.1.0")
    assert {p.key: p.value for p in model.metadata_props} == {"source_sha256": "ab" * 32}


REFUSED: dict[str, tuple[Callable[..., Any], list[jax.ShapeDtypeStruct], str]] = {
    "complex tanh": (lambda x: jnp.tanh(jnp.fft.rfft(x)).real, [spec((8,))], "stablehlo.tanh"),
    "bitcast": (lambda x: lax.bitcast_convert_type(x, jnp.int32), [spec((4,))], "stablehlo.bitcast_convert"),
    "eigh's vectors": (lambda x: jnp.linalg.eigh(x)[1], [spec((3, 3))], "stablehlo.custom_call @lapack_ssyevd_ffi"),
    "eigh's vectors summed": (lambda x: jnp.linalg.eigh(x)[0] + jnp.linalg.eigh(x)[1].sum(), [spec((2, 3, 3))],
                              "stablehlo.custom_call @lapack_ssyevd_ffi"),
    "eigh's vectors in a branch": (lambda p, x: lax.cond(p, lambda: jnp.linalg.eigh(x)[1][0], lambda: x[0]),
                                   [spec((), np.bool_), spec((3, 3))], "stablehlo.custom_call @lapack_ssyevd_ffi"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_operations_of_the_next_issue_are_refused_with_their_name(case: str) -> None:
    function, specs, operation = REFUSED[case]
    with pytest.raises(UnsupportedOperationError) as info:
        to_onnx(function, *specs)
    assert info.value.operation == operation
    assert "test_onnx_translate.py:" in info.value.location


def test_integer_division_by_constants_equals_jax() -> None:
    x = np.array([-7, -1, 0, 5, 9, 2**31 - 1], np.int32)
    assert_same(lambda x: (x // 3, lax.rem(x, np.int32(3)), lax.div(x, np.int32(-4)), lax.rem(x, np.int32(-4)), x // 2 * 2,
                           jnp.sign(x)),
                [spec((6,), jnp.int32)], [x])


def test_names_must_cover_every_input_and_output() -> None:
    record = jaxport.export(jax.jit(jnp.sin))(spec((3,))).record
    with pytest.raises(ConversionError, match="2 input and 1 output names for 1 inputs and 1 outputs"):
        translate(record, input_names=["x", "z"], output_names=["y"])


def test_a_module_for_several_platforms_keeps_the_cpu_branch() -> None:
    record = jaxport.export(jax.jit(lambda x: jnp.sin(x) @ x.T), platforms=("cuda", "cpu"))(spec((3, 3))).record
    model = translate(record, input_names=["in0"], output_names=["out0"])
    x = normal(3, 3)
    np.testing.assert_allclose(run(model, [x])[0], np.sin(x) @ x.T, rtol=1e-5, atol=1e-6)


def test_names_of_the_callers_are_never_taken_by_the_graphs_own_values() -> None:
    record = jaxport.export(jax.jit(lambda x: (jnp.sin(x) + 1, x)))(spec((3,))).record
    model = translate(record, input_names=["sin_1"], output_names=["add_2", "scalar_3"])
    x = normal(3)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    y, same = session.run(None, {"sin_1": x})
    np.testing.assert_allclose(y, np.sin(x) + 1, rtol=1e-6)
    np.testing.assert_array_equal(same, x)
    with pytest.raises(ConversionError, match="are not all different"):
        translate(record, input_names=["x"], output_names=["y", "x"])


def test_sharding_constraints_of_a_module_for_one_device_are_their_value() -> None:
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    sharding = NamedSharding(Mesh(np.array(jax.devices()[:1]), ("x",)), PartitionSpec("x"))
    model = assert_same(lambda x: lax.with_sharding_constraint(x * 2, sharding) + 1, [spec((4,))], [normal(4)])
    assert ops(model) <= {"Mul", "Add", "Identity", "Unsqueeze", "Expand"}


def test_uint64_shifts_and_selects_are_exact_in_a_where_both_runtimes_have() -> None:
    # onnxruntime-web has Where for neither uint64 nor uint32, int8, int16, uint16, bool: the translation
    # selects those in a type it has (the module's batch runs this model in onnxruntime-web too).
    with jax.enable_x64(True):
        u64 = np.uint64
        model = assert_same(
            lambda x, y, p: (lax.shift_left(x, y), lax.shift_right_logical(x, y), lax.shift_right_arithmetic(x, y),
                             jnp.where(p, x, y)),
            [spec((4,), u64), spec((4,), u64), spec((4,), np.bool_)],
            [np.array([1, 2**63 + 5, 2**64 - 1, 7], u64), np.array([1, 63, 64, 70], u64),
             np.array([True, False, True, False])])
    typed = {v.name: v.type.tensor_type.elem_type for v in onnx.shape_inference.infer_shapes(model).graph.value_info}
    assert {typed.get(n.output[0]) for n in model.graph.node if n.op_type == "Where"} == {onnx.TensorProto.INT64}
