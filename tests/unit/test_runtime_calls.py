"""The call front that every runtime shares, on signatures and fake arrays (no JAX, no NumPy)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from jaxport.application.conversion.model import ConvertedCall
from jaxport.domain.calls.signature import Signature
from jaxport.domain.converted.manifest import ConvertedFunction, Variant
from jaxport.domain.artifact.record import AvalRecord, DType, TreeKind, TreeSpec
from jaxport.domain.errors import (
    ArtifactError,
    CallError,
    DtypeMismatchError,
    RankMismatchError,
    ShapeMismatchError,
    TreeMismatchError,
)
from jaxport.domain.ports import HostArray
from jaxport.domain.errors import UncompiledSizeError
from jaxport.domain.calls.front import (
    check_call, flatten_call, leaf_paths, unflatten_results, with_weights_bound
)
from jaxport.domain.symbolic import ShapeAssertionError

LEAF = TreeSpec.leaf()


@dataclass(frozen=True)
class FakeArray:
    shape: tuple[int, ...]
    dtype: str = "float32"


def signature(in_tree: TreeSpec, in_avals: Sequence[AvalRecord], out_tree: TreeSpec | None = None,
              constraints: tuple[str, ...] = ()) -> Signature:
    out_tree = out_tree or TreeSpec.of_dict({"y": LEAF, "z": TreeSpec.of_tuple(LEAF, TreeSpec.none())})
    outs = (AvalRecord(("b",), DType.FLOAT32),) * out_tree.num_leaves
    return Signature("f", in_tree, tuple(in_avals), out_tree, outs, constraints)


def args_tree(*args: TreeSpec, **kwargs: TreeSpec) -> TreeSpec:
    return TreeSpec.of_tuple(TreeSpec.of_tuple(*args), TreeSpec.of_dict(kwargs))


F = signature(args_tree(LEAF, TreeSpec.of_dict({"w": LEAF, "n": TreeSpec.of_list(LEAF)}), scale=LEAF),
           [AvalRecord(("b", "4"), DType.FLOAT32), AvalRecord(("b",), DType.INT32),
            AvalRecord(("4",), DType.FLOAT32), AvalRecord((), DType.FLOAT32)], constraints=("b >= 2",))


def good_call(b: int) -> tuple[tuple[Any, ...], dict[str, Any]]:
    return (FakeArray((b, 4)), {"w": FakeArray((4,)), "n": [FakeArray((b,), "int32")]}), {"scale": FakeArray(())}


def test_a_call_flattens_in_the_exported_order_and_solves_the_dimension_variables() -> None:
    args, kwargs = good_call(3)
    leaves = flatten_call(F, args, kwargs)
    assert [leaf.shape for leaf in leaves] == [(3, 4), (3,), (4,), ()]
    assert check_call(F, leaves) == {"b": 3}


def test_leaf_paths_name_arguments_as_jax_does() -> None:
    assert leaf_paths(F.in_tree) == ("args[0]", "args[1]['n'][0]", "args[1]['w']", "kwargs['scale']")


@pytest.mark.parametrize("args, kwargs, expected", [
    ((FakeArray((3, 4)),), {"scale": FakeArray(())}, "args is a tuple of length 1 in the invocation and a tuple of length 2"),
    ((FakeArray((3, 4)), [FakeArray((4,))]), {"scale": FakeArray(())}, "args[1] is a <class 'list'> in the invocation and a <class 'dict'>"),
    ((FakeArray((3, 4)), {"w": FakeArray((4,)), "m": []}), {"scale": FakeArray(())}, "symmetric difference of key sets: {'m' 'n'}"),
    ((FakeArray((3, 4)), {"w": FakeArray((4,)), "n": FakeArray((3,))}), {"scale": FakeArray(())},
     "args[1]['n'] is a <class 'tests.unit.test_runtime_calls.FakeArray'> in the invocation and a <class 'list'>"),
    ((FakeArray((3, 4)), {"w": [FakeArray((4,))], "n": [FakeArray((3,))]}), {"scale": FakeArray(())},
     "args[1]['w'] is a <class 'list'> in the invocation and a pytree leaf"),
    ((FakeArray((3, 4)), {"w": FakeArray((4,)), "n": [FakeArray((3,))]}), {}, "kwargs is a <class 'dict'> with keys []"),
])
def test_a_call_of_another_pytree_is_refused_with_each_difference_by_path(
        args: tuple[Any, ...], kwargs: dict[str, Any], expected: str) -> None:
    with pytest.raises(TreeMismatchError) as info:
        flatten_call(F, args, kwargs)
    assert expected in str(info.value)
    assert "the function 'f' was exported" in str(info.value)


def test_a_custom_node_is_given_as_a_sequence_of_its_children() -> None:
    custom = TreeSpec(TreeKind.CUSTOM, (LEAF, LEAF), custom_name="tests.Pair")
    r = signature(args_tree(custom), [AvalRecord(("2",), DType.FLOAT32)] * 2, out_tree=custom)
    assert len(flatten_call(r, ((FakeArray((2,)), FakeArray((2,))),), {})) == 2
    with pytest.raises(TreeMismatchError, match="custom pytree node tests.Pair"):
        flatten_call(r, (object(),), {})
    assert unflatten_results(r, [1, 2]) == (1, 2)


@pytest.mark.parametrize("leaves, error, match", [
    ([FakeArray((3, 4), "int32"), FakeArray((3,), "int32"), FakeArray((4,)), FakeArray(())],
     DtypeMismatchError, r"Dtype mismatch for args\[0\]: expected float32 and called with int32"),
    ([FakeArray((3,)), FakeArray((3,), "int32"), FakeArray((4,)), FakeArray(())],
     RankMismatchError, r"Rank mismatch for args\[0\]: expected \(b, 4\) and called with \(3,\)"),
    ([FakeArray((3, 5)), FakeArray((3,), "int32"), FakeArray((4,)), FakeArray(())],
     ShapeMismatchError, r"args\[0\].shape\[1\] \(expected same constant\)"),
    ([FakeArray((3, 4)), FakeArray((5,), "int32"), FakeArray((4,)), FakeArray(())],
     ShapeAssertionError, r"Found inconsistency between dimension size args\[1\]\['n'\]\[0\].shape\[0\] \(= 5\)"),
    ([FakeArray((1, 4)), FakeArray((1,), "int32"), FakeArray((4,)), FakeArray(())],
     ShapeAssertionError, r"symbolic shape constraint b >= 2"),
    ([3.0, FakeArray((3,), "int32"), FakeArray((4,)), FakeArray(())],
     CallError, r"args\[0\] is a float, not an array"),
])
def test_a_bad_call_is_refused_with_the_path_and_both_values(leaves: list[Any], error: type[Exception],
                                                             match: str) -> None:
    with pytest.raises(error, match=match):
        check_call(F, leaves)


def test_results_come_back_as_the_exported_pytree() -> None:
    assert unflatten_results(F, ["y", "z"]) == {"y": "y", "z": ("z", None)}
    with pytest.raises(ValueError, match="2 flat results, got 1"):
        unflatten_results(F, ["y"])


def test_a_signature_whose_shapes_do_not_parse_is_an_artifact_error() -> None:
    bad = signature(args_tree(LEAF), [AvalRecord(("b +",), DType.FLOAT32)])
    with pytest.raises(ArtifactError, match="does not parse"):
        check_call(bad, [FakeArray((3,))])


def test_with_weights_bound_the_caller_gives_the_other_arguments_only() -> None:
    bound = with_weights_bound(F, 1)
    assert leaf_paths(bound.in_tree) == ("args[0]['n'][0]", "args[0]['w']", "kwargs['scale']")
    assert bound.in_avals == F.in_avals[1:] and bound.nr_weights == 1
    with pytest.raises(ArtifactError, match="as its first positional argument"):
        with_weights_bound(F, 2)
    assert with_weights_bound(F, 0) is F  # no weights held: the signature as it is


class FakeRuntime:
    """Records what it is asked to run and answers with arrays of the results' count (the runtime port)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Variant, int]] = []

    def run(self, function: str, variant: Variant, args: Sequence[HostArray]) -> list[HostArray]:
        self.calls.append((function, variant, len(args)))
        return [FakeArray((variant.binding["b"],)) for _ in F.out_avals]


def test_the_front_checks_a_call_and_picks_its_variant_before_the_runtime_runs_anything() -> None:
    runtime = FakeRuntime()
    variants = (Variant("f.b=5", (("b", 5),)), Variant("f.b=8", (("b", 8),)))
    f = ConvertedCall(ConvertedFunction(F, variants), runtime)
    args, kwargs = good_call(5)
    out = f(*args, **kwargs)
    assert out == {"y": FakeArray((5,)), "z": (FakeArray((5,)), None)}
    bad_args, _ = good_call(1)
    with pytest.raises(ShapeAssertionError):
        f(*bad_args, **kwargs)
    with pytest.raises(TreeMismatchError):
        f(*args)
    with pytest.raises(UncompiledSizeError, match="No module of 'f' was compiled for b = 3"):
        f(*good_call(3)[0], **kwargs)
    assert runtime.calls == [("f", variants[0], 4)]
    assert repr(f) == "ConvertedCall('f')"
