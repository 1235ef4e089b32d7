"""Serving as domain logic: wire interfaces, which functions may be joined, the batching plan, the options."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, strategies as st

from jaxport.domain.artifact.record import ArtifactRecord, AvalRecord, DType, TreeSpec
from jaxport.domain.errors import CallError, ConversionError, UsageError
from jaxport.domain.serving.batching import largest_group, padded_rows, plan_groups, row_slices
from jaxport.domain.calls.front import leaf_paths, result_paths
from jaxport.domain.serving.options import ServeOptions
from jaxport.domain.serving.protocol import WireInterface, batch_variable, wire_interface

LEAF = TreeSpec.leaf()


def record(ins: Sequence[AvalRecord], outs: Sequence[AvalRecord], out_tree: TreeSpec | None = None,
           **kwargs: TreeSpec) -> ArtifactRecord:
    positional = len(ins) - len(kwargs)
    in_tree = TreeSpec.of_tuple(TreeSpec.of_tuple(*[LEAF] * positional), TreeSpec.of_dict(kwargs))
    out_tree = out_tree or (LEAF if len(outs) == 1 else TreeSpec.of_tuple(*[LEAF] * len(outs)))
    return ArtifactRecord(
        function_name="f", in_tree=in_tree, in_avals=tuple(ins), out_tree=out_tree, out_avals=tuple(outs),
        in_shardings=(None,) * len(ins), out_shardings=(None,) * len(outs), nr_devices=1, platforms=("cpu",),
        ordered_effects=(), unordered_effects=(), disabled_checks=(), mlir_module_serialized=b"",
        calling_convention_version=10, module_kept_var_idx=tuple(range(len(ins))), uses_global_constants=False)


def wire(r: ArtifactRecord, name: str = "predict") -> WireInterface:
    return wire_interface(name, r.signature, leaf_paths(r.in_tree), result_paths(r.out_tree))


def aval(dtype: DType, *dims: str) -> AvalRecord:
    return AvalRecord(tuple(dims), dtype)


def test_metadata_names_tensors_by_the_wire_rule_with_minus_one_for_symbolic_dims() -> None:
    r = record([aval(DType.FLOAT32, "b", "8"), aval(DType.INT32, "b")],
               [aval(DType.FLOAT32, "b", "3"), aval(DType.FLOAT32)],
               out_tree=TreeSpec.of_dict({"logits": LEAF, "loss": LEAF}), mask=LEAF)
    iface = wire(r)
    assert [t.metadata() for t in iface.inputs] == [
        {"name": "arg0", "datatype": "FP32", "shape": [-1, 8]}, {"name": "mask", "datatype": "INT32", "shape": [-1]}]
    assert [t.metadata() for t in iface.outputs] == [
        {"name": "logits", "datatype": "FP32", "shape": [-1, 3]}, {"name": "loss", "datatype": "FP32", "shape": []}]
    assert [t.path for t in iface.inputs] == ["args[0]", "kwargs['mask']"]


def test_bfloat16_is_served_as_fp32_and_dtypes_the_protocol_lacks_are_refused_with_their_path() -> None:
    iface = wire(record([aval(DType.BFLOAT16, "b")], [aval(DType.BFLOAT16, "b")]))
    assert (iface.inputs[0].datatype, iface.inputs[0].widened, iface.outputs[0].widened) == ("FP32", True, True)
    with pytest.raises(ConversionError, match=r"the Open Inference Protocol \(out\).*complex64"):
        wire(record([aval(DType.FLOAT32, "b")], [aval(DType.COMPLEX64, "b")]))


def test_a_request_names_every_input_once_or_is_refused_with_the_names() -> None:
    iface = wire(record([aval(DType.FLOAT32, "b"), aval(DType.FLOAT32, "b")], [aval(DType.FLOAT32, "b")]))
    assert iface.order_inputs([("arg1", "y"), ("arg0", "x")]) == ["x", "y"]
    with pytest.raises(CallError, match=r"unknown input\(s\) \['z'\] and missing input\(s\) \['arg1'\]; "
                                        r"its inputs are \['arg0', 'arg1'\]"):
        iface.order_inputs([("arg0", 1), ("z", 2)])
    with pytest.raises(CallError, match="gives the input 'arg0' of 'predict' twice"):
        iface.order_inputs([("arg0", 1), ("arg0", 2)])


def test_only_functions_whose_every_tensor_leads_with_one_variable_may_be_joined() -> None:
    good = record([aval(DType.FLOAT32, "b", "8"), aval(DType.INT32, "b")], [aval(DType.FLOAT32, "b", "3")])
    assert batch_variable(wire(good)) == "b"
    loss = record([aval(DType.FLOAT32, "b", "8")], [aval(DType.FLOAT32)])
    with pytest.raises(UsageError, match=r"--batch loss: its out \('output_0', dims \[\]\) does not lead with "
                                         r"the batch dimension variable b"):
        batch_variable(wire(loss, "loss"))
    other = record([aval(DType.FLOAT32, "b"), aval(DType.FLOAT32, "n")], [aval(DType.FLOAT32, "b")])
    with pytest.raises(UsageError, match=r"args\[1\]"):
        batch_variable(wire(other))
    static = record([aval(DType.FLOAT32, "4")], [aval(DType.FLOAT32, "4")])
    with pytest.raises(UsageError, match=r"variable \(none\)"):
        batch_variable(wire(static))
    square = record([aval(DType.FLOAT32, "b", "b")], [aval(DType.FLOAT32, "b")])
    with pytest.raises(UsageError, match="beyond its first dimension"):
        batch_variable(wire(square))
    expression = record([aval(DType.FLOAT32, "b", "2*b + 1")], [aval(DType.FLOAT32, "b")])
    with pytest.raises(UsageError, match="beyond its first dimension"):
        batch_variable(wire(expression))


def test_groups_keep_arrival_order_and_a_large_request_goes_alone() -> None:
    assert plan_groups([], 4) == []
    assert plan_groups([1, 1, 1, 1, 1], 2) == [range(0, 2), range(2, 4), range(4, 5)]
    assert plan_groups([3, 9, 1], 4) == [range(0, 1), range(1, 2), range(2, 3)]
    with pytest.raises(ValueError, match="max_rows"):
        plan_groups([1], 0)


@given(st.lists(st.integers(0, 20), max_size=30), st.integers(1, 16))
def test_every_request_is_in_exactly_one_group_within_the_limit(rows: list[int], limit: int) -> None:
    groups = plan_groups(rows, limit)
    assert [i for g in groups for i in g] == list(range(len(rows)))
    for g in groups:
        assert len(g) == 1 or sum(rows[i] for i in g) <= limit


def test_a_group_is_padded_to_the_nearest_compiled_size_and_capped_by_the_largest() -> None:
    assert [padded_rows(n, (1, 4, 8)) for n in (1, 2, 4, 5, 8, 9)] == [1, 4, 4, 8, 8, 9]
    assert padded_rows(5, ()) == 5
    assert largest_group(32, (1, 4, 8)) == 8 and largest_group(2, (1, 4, 8)) == 2 and largest_group(3, ()) == 3
    assert row_slices([1, 3, 0, 2]) == [(0, 1), (1, 4), (4, 4), (4, 6)]


def test_options_out_of_range_are_refused() -> None:
    assert ServeOptions().host == "127.0.0.1"
    for bad, match in (({"http_port": 70000}, "port number"), ({"http_port": 9, "grpc_port": 9}, "share"),
                       ({"max_batch_size": 0}, "max_batch_size"), ({"max_batch_delay_ms": -1}, "delay"),
                       ({"max_request_bytes": 10}, "max_request_bytes"), ({"host": ""}, "host"),
                       ({"max_slots": 0}, "max_slots"), ({"max_queue": -1}, "max_queue"),
                       ({"drain_seconds": -1.0}, "drain_seconds"), ({"model_name": " "}, "model_name")):
        with pytest.raises(UsageError, match=match):
            ServeOptions(**bad)
    with pytest.raises(UsageError, match=r"not served: \['nope'\]"):
        ServeOptions(batch=("nope",)).check_batch(["predict"])
