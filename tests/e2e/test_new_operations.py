"""JAX 0.12.1's new operations on every runtime target: ``fma``, ``exp2``, ``log2``, ``lgamma``, ``digamma``.

Each function is exported with JAX's forward-compatibility gate on and off
(tests/helpers/new_operations.py says what each gate writes), converted to
ONNX, LiteRT and IREE, loaded and called; its results are JAX's
(``jax.jit`` on this CPU) within the dtype's default tolerance. The unfolding
itself is :mod:`jaxport.adapters.mlir.unfold` (the targets' shared rewrite);
a dtype a target has no form for is refused by its plan, naming the
operation and the dtype, and nothing is written. The targets' own tests are
tests/e2e/test_onnx.py, test_litert.py and test_iree.py.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import jax
import pytest

import jaxport
from jaxport.errors import ConversionError, UnsupportedOperationError
from tests.helpers import new_operations as ops


def _target(name: str, *modules: str) -> object:
    missing = [m for m in modules if importlib.util.find_spec(m.split(".")[0]) is None]
    return pytest.param(name, id=name, marks=pytest.mark.skipif(bool(missing), reason=f"{missing} not installed"))


TARGETS = [_target("onnx", "onnx", "onnxruntime"), _target("litert", "litert_converter", "ai_edge_litert"),
           _target("iree", "iree.compiler", "iree.runtime")]


def _module_has(exported: jaxport.Exported, operations: tuple[str, ...]) -> None:
    text = exported.mlir_module()
    missing = [o for o in operations if not re.search(re.escape(o) + r"\b", text)]
    assert not missing, f"the export does not hold {missing}"


@pytest.fixture(scope="module", params=[False, True], ids=["gate-on", "gate-off"])
def float32_export(request: pytest.FixtureRequest) -> tuple[bool, jaxport.Exported]:
    exported = ops.export(ops.five, ["float32"] * 4, gate_off=request.param, symbolic=True)
    _module_has(exported, ops.GATE_OFF_OPERATIONS if request.param else ops.GATE_ON_OPERATIONS)
    return request.param, exported


@pytest.mark.parametrize("target", TARGETS)
def test_float32_with_the_gate_on_and_off_converts_and_computes_jaxs_values(
        float32_export: tuple[bool, jaxport.Exported], target: str, tmp_path: Path) -> None:
    _, exported = float32_export  # symbolic: IREE compiles one size, ONNX and LiteRT take any
    jaxport.convert(exported, tmp_path / "out", to=target, dims={"five": [{"n": 16}]} if target == "iree" else None)
    five = jaxport.load_converted(tmp_path / "out")["five"]
    for size in (16,) if target == "iree" else (16, 5):
        args = ops.inputs("float32", size)
        ops.assert_close(five(*args), ops.expected(ops.five, args))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("gate_off", [True, False], ids=["gate-off", "gate-on"])
def test_float16_and_bfloat16_are_computed_in_float32_on_every_target(target: str, gate_off: bool,
                                                                     tmp_path: Path) -> None:
    exported = ops.export(ops.five_twice, ["float16"] * 4 + ["bfloat16"] * 4, gate_off=gate_off)
    if target == "litert" and not gate_off:
        # JAX's forward-compatible exp2 and log2 compute float16 and bfloat16 as they are (exp, log,
        # multiply): LiteRT's converter has no kernel for them, as for jnp.exp or jnp.log, and says so.
        with pytest.raises(ConversionError, match=r"cannot legalize the operation\(s\) 'tfl\.\w+'.*xb?f16>"):
            jaxport.convert(exported, tmp_path / "out", to=target)
        assert list(tmp_path.iterdir()) == []
        return
    jaxport.convert(exported, tmp_path / "out", to=target)
    args = ops.inputs("float16") + ops.inputs("bfloat16")
    got = jaxport.load_converted(tmp_path / "out")["five_twice"](*args)
    ops.assert_close(got, ops.expected(ops.five_twice, args))


def test_jax_exports_own_artifact_with_the_gate_off_converts(tmp_path: Path) -> None:
    """What JAX 0.12.1's own ``jax.export`` writes with the gate off (StableHLO 1.22: the kernels' custom
    calls, ``exp2`` and ``log2`` already written with ``exp`` and ``log``; no ``fma``, which 1.22 lacks)."""
    pytest.importorskip("onnxruntime")
    spec = jax.ShapeDtypeStruct((16,), "float32")
    with ops.gate_scope(off=True):
        exported = jax.export.export(jax.jit(ops.three_and_kernels))(spec, spec, spec, spec)
    assert "@cpu_lgamma_ffi" in exported.mlir_module() and "@cpu_digamma_ffi" in exported.mlir_module()
    (tmp_path / "f.jax").write_bytes(exported.serialize())
    jaxport.convert(tmp_path / "f.jax", tmp_path / "out", to="onnx")
    args = ops.inputs("float32")
    converted = jaxport.load_converted(tmp_path / "out")
    ops.assert_close(converted[next(iter(converted))](*args), ops.expected(ops.three_and_kernels, args))


def test_float64_converts_where_the_target_has_a_form_of_it(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    with jax.enable_x64(True):
        five = ops.export(ops.five, ["float64"] * 4, gate_off=True)
        args = ops.inputs("float64")
        jaxport.convert(five, tmp_path / "onnx", to="onnx")
        ops.assert_close(jaxport.load_converted(tmp_path / "onnx")["five"](*args), ops.expected(ops.five, args))
        if importlib.util.find_spec("iree") is not None:  # IREE: fma, exp2 and log2 in float64, not the kernels
            three = ops.export(ops.three, ["float64"] * 4, gate_off=True)
            jaxport.convert(three, tmp_path / "iree", to="iree")
            got = jaxport.load_converted(tmp_path / "iree")["three"](*args)
            ops.assert_close(got, ops.expected(ops.three, args))


@pytest.mark.parametrize("target, operation, why", [
    ("litert", "stablehlo.fma", "its converter legalizes no float64 arithmetic"),
    ("iree", "stablehlo.custom_call @cpu_lgamma_ffi (lgamma)", "its CPU backend has no float64 sine"),
])
def test_a_dtype_without_a_form_is_refused_naming_the_operation_and_the_dtype_and_nothing_is_written(
        target: str, operation: str, why: str, tmp_path: Path) -> None:
    with jax.enable_x64(True):
        exported = ops.export(ops.five, ["float64"] * 4, gate_off=True)
    with pytest.raises(UnsupportedOperationError) as raised:
        jaxport.convert(exported, tmp_path / "out", to=target)
    assert raised.value.operation == operation
    assert f"has no float64 form of it: {why}" in str(raised.value)
    assert f"jit(five)/{operation.split()[-1].strip('()').removeprefix('stablehlo.')}" in raised.value.location
    assert list(tmp_path.iterdir()) == []
