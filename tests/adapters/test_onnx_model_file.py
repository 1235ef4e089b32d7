"""The standard-library reader of .onnx files (:mod:`jaxport.adapters.onnx.model_file`) against onnx's own parser."""

from __future__ import annotations

import random

import pytest

pytest.importorskip("onnx", reason="needs the jaxport[onnx] extra")

import onnx  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

from jaxport.adapters.onnx.model_file import MAX_DEPTH, WireError, read_model  # noqa: E402


def _external(name: str, location: str) -> TensorProto:
    tensor = helper.make_tensor(name, TensorProto.FLOAT, [2], [0.0, 0.0])
    tensor.ClearField("float_data")
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"), ("length", "8")):
        tensor.external_data.add(key=key, value=value)
    return tensor


def _model() -> onnx.ModelProto:
    """External data everywhere a tensor can be: an initializer, a Constant's attribute, a subgraph,
    a sparse initializer, a function's attribute default."""
    branch = helper.make_graph([helper.make_node("Constant", [], ["z"], value=_external("in_branch", "b.bin"))],
                               "branch", [], [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2])])
    nodes = [helper.make_node("Constant", [], ["c"], value=_external("constant", "c.bin")),
             helper.make_node("If", ["cond"], ["y"], then_branch=branch, else_branch=branch)]
    sparse = helper.make_sparse_tensor(_external("values", "s.bin"), helper.make_tensor("idx", TensorProto.INT64,
                                                                                        [1], [0]), [2])
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
                                           helper.make_tensor_value_info("w", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
                              initializer=[_external("w", "params.safetensors")], sparse_initializer=[sparse])
    function = helper.make_function("local", "f", ["a"], ["b"], [helper.make_node("Identity", ["a"], ["b"])],
                                    [helper.make_opsetid("", 21)])
    function.attribute_proto.add().CopyFrom(helper.make_attribute("default", _external("fdefault", "f.bin")))
    model = helper.make_model(graph, functions=[function], opset_imports=[helper.make_opsetid("", 21)])
    helper.set_model_props(model, {"jaxport.bfloat16_inputs": "w", "source": "tests"})
    return model


def test_it_finds_what_onnx_finds() -> None:
    model = _model()
    facts = read_model(model.SerializeToString())
    assert facts.inputs == ["cond", "w"] and facts.outputs == ["y"] and facts.initializers == {"w"}
    assert facts.metadata == {"jaxport.bfloat16_inputs": "w", "source": "tests"}
    assert sorted((t.name, t.locations) for t in facts.external) == [
        ("constant", (b"c.bin",)), ("fdefault", (b"f.bin",)), ("in_branch", (b"b.bin",)), ("in_branch", (b"b.bin",)),
        ("values", (b"s.bin",)), ("w", (b"params.safetensors",))]


def test_a_graph_given_twice_is_read_twice_as_protobuf_merges_it() -> None:
    model = _model()
    extra = helper.make_graph([], "g", [], [], initializer=[_external("hidden", "../secret.bin")])
    data = model.SerializeToString() + onnx.ModelProto(graph=extra).SerializeToString()
    merged = onnx.ModelProto.FromString(data)
    assert "hidden" in [t.name for t in merged.graph.initializer]  # what a protobuf parser sees
    assert ("hidden", (b"../secret.bin",)) in [(t.name, t.locations) for t in read_model(data).external]


def _length_delimited(number: int, payload: bytes) -> bytes:
    size, out = len(payload), bytearray([number << 3 | 2])
    while size >= 0x80:
        out.append(size & 0x7F | 0x80)
        size >>= 7
    return bytes(out) + bytes([size]) + payload


@pytest.mark.parametrize("depth, refused", [(MAX_DEPTH, False), (MAX_DEPTH + 1, True)])
def test_graphs_nested_too_deeply_are_refused(depth: int, refused: bool) -> None:
    graph = b""  # by hand: protobuf's own parser and builder stop at 100 levels of messages
    for _ in range(depth):  # graph { node { attribute { g: graph } } }
        graph = _length_delimited(1, _length_delimited(5, _length_delimited(6, graph)))
    data = _length_delimited(7, graph)
    if refused:
        with pytest.raises(WireError, match="nest deeper"):
            read_model(data)
    else:
        assert read_model(data).external == []


@pytest.mark.parametrize("data, message", [
    (b"\x3a\xff\xff\xff\xff\x0f", "runs past the end"),  # graph of 4 GiB
    (b"\x3a", "varint runs past the end"),
    (b"\x3b\x3c", "groups"),
    (b"\x38\x01", "not length-delimited"),  # graph as a varint
    (b"\x80" * 11, "longer than 10 bytes"),
    (b"\x00", "field number 0"),
])
def test_damaged_bytes_are_a_wire_error(data: bytes, message: str) -> None:
    with pytest.raises(WireError, match=message):
        read_model(data)


def test_mutated_models_give_facts_or_a_wire_error_and_never_miss_a_location_onnx_sees() -> None:
    blob = _model().SerializeToString()
    rng = random.Random(38)
    for _ in range(2_000):
        data = bytearray(blob)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        try:
            facts = read_model(bytes(data))
        except WireError:
            continue
        try:
            theirs = onnx.ModelProto.FromString(bytes(data))
        except Exception:  # noqa: BLE001 -- onnx refuses what jaxport read: nothing to compare
            continue
        ours = {loc for t in facts.external for loc in t.locations}
        seen = {e.value.encode("utf-8", "surrogateescape") if isinstance(e.value, str) else e.value
                for t in theirs.graph.initializer for e in t.external_data if e.key == "location"}
        assert seen <= ours, (seen, ours)
