"""The smallest inputs the verifying child calls a variant on: the constraints' smallest values, or a refusal."""

from __future__ import annotations

import pytest

from jaxport.domain.artifact.record import AvalRecord, DType, TreeSpec
from jaxport.domain.calls.signature import Signature
from jaxport.domain.converted.manifest import ConvertedFunction, Variant
from jaxport.domain.bundle.manifest import Example, WeightRecord
from jaxport.domain.converted.smallest_inputs import examined_variants, smallest_inputs
from jaxport.domain.errors import ArtifactError

_LEAF = TreeSpec.leaf()


def _function(shapes: list[tuple[str, ...]], constraints: tuple[str, ...] = (),
              dtype: DType = DType.FLOAT32) -> ConvertedFunction:
    in_tree = TreeSpec.of_tuple(TreeSpec.of_tuple(*[_LEAF] * len(shapes)), TreeSpec.of_dict({}))
    signature = Signature("f", in_tree, tuple(AvalRecord(s, dtype) for s in shapes), _LEAF,
                          (AvalRecord(("4",), DType.FLOAT32),), constraints)
    return ConvertedFunction(signature, (Variant("f.onnx"),))


def _shapes(function: ConvertedFunction, variant: Variant | None = None) -> list[tuple[int, ...]]:
    (first,) = smallest_inputs(function, variant or function.variants[0])
    return [tuple(int(d) for d in s.shape) for s in first]


def test_a_static_function_is_called_at_its_shapes_in_its_dtypes() -> None:
    function = _function([("2", "3"), ()], dtype=DType.BFLOAT16)
    specs = smallest_inputs(function, function.variants[0], count=3)  # static: one call only
    assert [[(s.shape, s.dtype) for s in one] for one in specs] == [[((2, 3), "bfloat16"), ((), "bfloat16")]]


def test_a_free_variable_takes_one_without_constraints_and_its_lower_bound_with_them() -> None:
    assert _shapes(_function([("b", "4")])) == [(1, 4)]
    assert _shapes(_function([("b", "4")], ("b >= 16",))) == [(16, 4)]
    assert _shapes(_function([("a", "b")], ("a >= b + 3",))) == [(4, 1)]
    assert _shapes(_function([("2*b + 1",), ("b",)], ("b >= 3",))) == [(7,), (3,)]


def test_the_next_smallest_calls_follow_the_smallest_total_first() -> None:
    function = _function([("a", "b")], ("b >= 2",))
    calls = smallest_inputs(function, function.variants[0], count=4)
    assert [one[0].shape for one in calls] == [(1, 2), (1, 3), (2, 2), (1, 4)]


def test_a_constraint_the_bounds_miss_is_met_by_the_smallest_larger_value() -> None:
    assert _shapes(_function([("b",)], ("mod(b, 4) == 0",))) == [(4,)]
    assert _shapes(_function([("b - 2",)])) == [(0,)]  # b = 1 would make a negative dimension


def test_a_variant_binds_its_variables_and_the_others_stay_smallest() -> None:
    function = _function([("b", "c")], ("b >= 16", "c >= 2"))
    assert _shapes(function, Variant("f-20.onnx", (("b", 20),))) == [(20, 2)]


def test_a_variant_whose_binding_breaks_the_constraints_has_no_inputs_and_says_why() -> None:
    function = _function([("b", "c")], ("b >= 16",))
    with pytest.raises(ArtifactError, match=r"no inputs of 'f' fit its constraints \['b >= 16'\]: at b = 2, "
                                            r"c = 1: Input shapes do not match the symbolic shape constraint"):
        smallest_inputs(function, Variant("f-2.onnx", (("b", 2),)))


def test_constraints_no_value_satisfies_are_refused_naming_the_function() -> None:
    with pytest.raises(ArtifactError, match="'f' has no inputs: The symbolic constraints"):
        smallest_inputs(_function([("b",)], ("b >= 5", "b <= 3")), Variant("f.onnx"))


def test_the_variants_golden_examples_reach_are_not_called_on_zeros() -> None:
    function = _function([("b",)])
    variants = (Variant("f-2.onnx", (("b", 2),)), Variant("f-4.onnx", (("b", 4),)))
    function = ConvertedFunction(function.signature, variants)

    def example(size: int, name: str = "f") -> Example:
        record = WeightRecord("args[0]", "float32", (size,), "float32", (size,))
        return Example(name, 0, function.signature.in_tree, _LEAF, (record,), ())

    assert examined_variants([function], [example(4)]) == {("f", "f-4.onnx")}
    assert examined_variants([function], [example(3), example(4, "g")]) == set()  # no variant, no function
