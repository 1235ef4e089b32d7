"""The text of an artifact's summary: a signature and lines that fit a terminal however large the model."""

from __future__ import annotations

import dataclasses

from jaxport.domain.artifact.record import ArtifactRecord, AvalRecord, DType, TreeSpec
from jaxport.domain.artifact.sharding import (
    AbstractMeshRecord, AxisType, NamedShardingRecord, PartitionSpecRecord
)
from jaxport.domain.artifact.info import WIDTH, ArtifactInfo
from jaxport.domain.artifact.info import NamedTree, signature_text

LEAF = AvalRecord(("8", "8"), DType.FLOAT32)


def layers(n: int) -> TreeSpec:
    """``{'layers': [{'b': ., 'w': .}, ...]}``: ``2 * n`` leaves."""
    layer = TreeSpec.of_dict({"b": TreeSpec.leaf(), "w": TreeSpec.leaf()})
    return TreeSpec.of_dict({"layers": TreeSpec.of_list(*[layer] * n)})


def model(n: int) -> ArtifactRecord:
    """``f(weights, x) -> (weights, loss)`` with ``2 * n`` weights."""
    weights = layers(n)
    return ArtifactRecord(
        function_name="f", in_tree=TreeSpec.of_tuple(TreeSpec.of_tuple(weights, TreeSpec.leaf()), TreeSpec.of_dict({})),
        in_avals=(LEAF,) * (2 * n + 1), out_tree=TreeSpec.of_tuple(weights, TreeSpec.leaf()),
        out_avals=(LEAF,) * (2 * n) + (AvalRecord((), DType.FLOAT32),), in_shardings=(None,) * (2 * n + 1),
        out_shardings=(None,) * (2 * n + 1), nr_devices=1, platforms=("cpu",), ordered_effects=(),
        unordered_effects=(), disabled_checks=(), mlir_module_serialized=b"", calling_convention_version=10,
        module_kept_var_idx=tuple(range(2 * n + 1)), uses_global_constants=False)


def test_a_short_signature_is_shown_whole_and_not_twice() -> None:
    info = ArtifactInfo.of(model(1))
    assert info.brief_signature is None
    assert info.signature == ("({'layers': [{'b': float32[8,8], 'w': float32[8,8]}]}, float32[8,8]) -> "
                              "({'layers': [{'b': float32[8,8], 'w': float32[8,8]}]}, float32[])")
    assert str(info).splitlines()[0] == "f" + info.signature


def test_a_long_signature_shows_deep_containers_by_their_number_of_arrays() -> None:
    info = ArtifactInfo.of(model(100))
    assert len(info.signature) > 5000 and info.signature.count("float32[8,8]") == 401
    assert str(info).splitlines()[0] == "f({'layers': [...200 arrays]}, float32[8,8]) -> ({...200 arrays}, float32[])"


def test_a_named_subtree_is_one_token_as_argument_and_as_result() -> None:
    record = model(100)
    named = NamedTree("params", layers(100), ("float32[8,8]",) * 200)
    assert signature_text(record.signature, named=named) == "(<params: 200 arrays>, float32[8,8]) -> (<params: 200 arrays>, float32[])"
    other = NamedTree("params", layers(100), ("float32[4]",) * 200)  # same tree, other leaves: not it
    assert "<params" not in signature_text(record.signature, named=other)


def test_a_signature_too_long_even_by_counts_is_cut() -> None:
    record = dataclasses.replace(model(1), function_name="g" * 140)
    line = str(ArtifactInfo.of(record)).splitlines()[0]
    assert len(line) == WIDTH and line.endswith("...")


def test_many_shardings_are_shown_by_counts_within_the_width() -> None:
    def sharding(axis: str) -> NamedShardingRecord:
        mesh = AbstractMeshRecord((2, 4), ("data", "model"), (AxisType.AUTO, AxisType.AUTO))
        return NamedShardingRecord(mesh, PartitionSpecRecord(((axis,), ())))

    spread = tuple(sharding(axis) for axis in ("data", "model")) * 100 + (sharding("data"),)
    record = dataclasses.replace(model(100), in_shardings=spread)
    lines = str(ArtifactInfo.of(record)).splitlines()
    assert max(len(line) for line in lines) <= WIDTH
    assert ("  in shardings: 101 x P('data', None) over {data: 2, model: 4}, "
            "100 x P('model', None) over {data: 2, model: 4}") in lines
    assert "  out shardings: 201 x unspecified" in lines


def test_weak_typed_inputs_and_outputs_are_listed_as_lost_by_older_readers() -> None:
    from tests.helpers.consumer_records import record

    weak = AvalRecord(("3",), DType.FLOAT32, weak_type=True)
    info = ArtifactInfo.of(record(in_avals=(weak,), out_avals=(weak,)))
    assert info.weak_types == ("arg0", "output_0")
    assert "  weak types: arg0, output_0 (strong for readers before JAX 0.12.1, which lose them)" in str(info)
    assert "weak types" not in str(ArtifactInfo.of(record()))
