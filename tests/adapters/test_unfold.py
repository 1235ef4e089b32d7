"""The converters' shared rewrite of StableHLO's newest operations and JAX's kernels (:mod:`jaxport.adapters.mlir.unfold`)."""

from __future__ import annotations

import re
from collections import Counter

from jaxlib.mlir import ir

from jaxport.adapters.mlir import bindings
from jaxport.adapters.mlir.unfold import newer_operations, unfold_float64_functions, unfolded_module

MODULE = """module {
  func.func public @main(%x: tensor<?xf32>, %h: tensor<4xf16>, %b: tensor<4xbf16>) -> (tensor<?xf32>, tensor<?xf32>, tensor<4xf16>, tensor<4xbf16>, tensor<4xf16>) {
    %0 = stablehlo.fma %x, %x, %x : tensor<?xf32> loc("jit(f)/fma")
    %1 = stablehlo.log2 %x : tensor<?xf32>
    %2 = stablehlo.exp2 %h : tensor<4xf16>
    %3 = stablehlo.custom_call @cpu_digamma_ffi(%b) : (tensor<4xbf16>) -> tensor<4xbf16>
    %4 = stablehlo.custom_call @cpu_lgamma_ffi(%h) : (tensor<4xf16>) -> tensor<4xf16>
    return %0, %1, %2, %3, %4 : tensor<?xf32>, tensor<?xf32>, tensor<4xf16>, tensor<4xbf16>, tensor<4xf16>
  }
}"""


def _ops(module: ir.Module) -> Counter[str]:
    return Counter(re.findall(r"\b(?:stablehlo|chlo|func)\.\w+", str(module)))


def test_the_walk_names_each_operation_to_unfold_with_its_dtype_and_location() -> None:
    with bindings.make_context():
        module = ir.Module.parse(MODULE)
        found = newer_operations(bindings.operations(module))
    assert [(o, d) for o, d, _ in found] == [
        ("stablehlo.fma", "float32"), ("stablehlo.log2", "float32"), ("stablehlo.exp2", "float16"),
        ("stablehlo.custom_call @cpu_digamma_ffi (digamma)", "bfloat16"),
        ("stablehlo.custom_call @cpu_lgamma_ffi (lgamma)", "float16")]
    assert found[0][2] == 'loc("jit(f)/fma")'


def test_the_unfolded_module_holds_only_older_stablehlo_and_computes_narrow_floats_in_float32() -> None:
    with bindings.make_context():
        module = unfolded_module(ir.Module.parse(MODULE))
        assert module.operation.verify()
        ops = _ops(module)
        assert not {"stablehlo.fma", "stablehlo.exp2", "stablehlo.log2", "stablehlo.custom_call"} & set(ops)
        assert not [o for o in ops if o.startswith("chlo.")]
        assert {"stablehlo.exponential", "stablehlo.log", "stablehlo.multiply", "stablehlo.add"} <= set(ops)
        # float16 and bfloat16 go to float32 and back: exp2 of %h, both kernels
        assert "(tensor<4xf16>) -> tensor<4xf32>" in str(module) and "(tensor<4xbf16>) -> tensor<4xf32>" in str(module)


def test_a_module_without_them_is_left_as_it_is() -> None:
    text = "module { func.func public @main(%x: tensor<4xf32>) -> tensor<4xf32> { return %x : tensor<4xf32> } }"
    with bindings.make_context():
        module = ir.Module.parse(text)
        assert unfolded_module(module) is module


def test_jaxs_float64_lgamma_function_is_replaced_only_on_narrower_floats_dimension_arguments_first() -> None:
    text = """module {
  func.func public @main(%n: tensor<i32>, %x: tensor<?xf32>, %y: tensor<4xf64>) -> (tensor<?xf32>, tensor<4xf64>) {
    %0 = call @lgamma_impl(%n, %x) : (tensor<i32>, tensor<?xf32>) -> tensor<?xf32>
    %1 = call @digamma_impl_0(%y) : (tensor<4xf64>) -> tensor<4xf64>
    return %0, %1 : tensor<?xf32>, tensor<4xf64>
  }
  func.func private @lgamma_impl(%n: tensor<i32>, %x: tensor<?xf32>) -> tensor<?xf32> { return %x : tensor<?xf32> }
  func.func private @digamma_impl_0(%y: tensor<4xf64>) -> tensor<4xf64> { return %y : tensor<4xf64> }
}"""
    with bindings.make_context():
        module = ir.Module.parse(text)
        assert unfold_float64_functions(module)
        ops = _ops(module)
    assert ops["chlo.lgamma"] == 1 and "call @lgamma_impl" not in str(module) and "call @digamma_impl_0" in str(module)
