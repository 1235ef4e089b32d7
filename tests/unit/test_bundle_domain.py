"""The bundle's domain: weight names, the manifest's JSON, and the checks at save and load (no JAX)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxport.domain.artifact.record import TreeKind, TreeSpec
from jaxport.domain.artifact.sharding import (
    AbstractMeshRecord, AxisType, NamedShardingRecord, PartitionSpecRecord
)
from jaxport.domain.bundle.checks import (
    LeafSpec, TensorEntry, agreed_shardings, check_files, check_matches_weights, check_weights_header,
    tree_difference
)
from jaxport.domain.bundle.manifest import FORMAT_VERSION, FunctionEntry, Manifest, WeightRecord
from jaxport.domain.checked_directory import FOLDER, FileDigest, check_digest, check_size
from jaxport.domain.bundle.names import check_weight_names, function_file
from jaxport.domain.leaf_names import name_entries, weight_name
from jaxport.domain.errors import ArtifactError, BundleError, BundleMismatchError

LEAF = TreeSpec.leaf()
TREE = TreeSpec.of_dict({"dense": TreeSpec.of_dict({"w": LEAF, "b": LEAF}), "scale": LEAF})
WEIGHTS = (WeightRecord("dense/b", "float32", (3,), "float32", (3,)),
           WeightRecord("dense/w", "float32", (4, 3), "float32", (4, 3)),
           WeightRecord("scale", "bfloat16", (), "bfloat16", ()))
LEAVES = [LeafSpec((3,), "float32"), LeafSpec((4, 3), "float32"), LeafSpec((), "bfloat16")]


def manifest(**changes: object) -> Manifest:
    files = {"predict.jaxport": FileDigest(100, "aa"), "params.safetensors": FileDigest(200, "bb")}
    fields: dict[str, object] = dict(functions=(FunctionEntry("predict", "predict.jaxport"),),
                                     params_tree=TREE, weights=WEIGHTS, metadata={"epoch": 3}, files=files)
    fields.update(changes)
    return Manifest(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize("entries, name", [
    (["dense", "w"], "dense/w"), (["layers", "0", "b"], "layers/0/b"), ([], ""),
    (["a/b"], "a~1b"), (["a~1"], "a~01"), (["", ""], "~e/~e"), ([""], "~e"), (["~", "/"], "~0/~1"),
    (["~e"], "~0e"),
])
def test_weight_names_join_key_path_entries_with_slashes_and_escape_them(entries: list[str], name: str) -> None:
    assert weight_name(entries) == name
    assert name_entries(name) == tuple(entries)


def test_a_key_holding_a_slash_and_a_nested_path_get_different_names() -> None:
    assert weight_name(["a/b"]) != weight_name(["a", "b"])


def test_duplicate_and_reserved_weight_names_are_refused() -> None:
    with pytest.raises(BundleError, match="Two weights have the key path 'x'"):
        check_weight_names(["x", "y", "x"])
    with pytest.raises(BundleError, match="safetensors reserves"):
        check_weight_names(["__metadata__"])


@pytest.mark.parametrize("bad", ["", ".hidden", "a/b", "-x", "a b", "../up"])
def test_function_names_that_cannot_name_a_file_are_refused(bad: str) -> None:
    with pytest.raises(BundleError, match="cannot name a file"):
        function_file(bad)


def test_the_manifest_round_trips_through_json_with_custom_nodes_and_keys() -> None:
    tree = TreeSpec.of_tuple(TREE, TreeSpec.none(), TreeSpec(TreeKind.CUSTOM, (LEAF,), custom_name="P",
                                                             custom_auxdata=b"\x00\xff"))
    weights = WEIGHTS + (WeightRecord("2/0", "key<fry>", (2,), "uint32", (2, 2), "threefry2x32"),)
    m = manifest(params_tree=tree, weights=weights)
    again = Manifest.from_json(m.to_json())
    assert again == m
    doc = json.loads(m.to_json())
    assert doc["format_version"] == FORMAT_VERSION
    assert [leaf["key_path"] for leaf in doc["params"]["leaves"]] == ["dense/b", "dense/w", "scale", "2/0"]
    assert doc["params"]["leaves"][3]["stored_as"] == {"dtype": "uint32", "shape": [2, 2]}


def test_a_manifest_of_a_newer_format_version_is_refused_with_upgrade_advice() -> None:
    doc = json.loads(manifest().to_json())
    doc["format_version"] = FORMAT_VERSION + 1
    with pytest.raises(ArtifactError, match=f"manifest.json: the bundle has format version {FORMAT_VERSION + 1}, newer"):
        Manifest.from_json(json.dumps(doc).encode())


@pytest.mark.parametrize("damage, message", [
    (lambda d: d.pop("functions"), "manifest.json: the field 'functions' is missing"),
    (lambda d: d["params"]["leaves"].pop(), "the params tree has 3 leaves but 2 are listed"),
    (lambda d: d["params"]["leaves"][0].update(shape=[-1]), "'shape' is not a list of sizes"),
    (lambda d: d["params"]["leaves"][0].update(dtype="complex64"), "unsupported dtype 'complex64'"),
    (lambda d: d["params"]["tree"].update(kind="set"), "not a pytree structure"),
    (lambda d: d["files"]["predict.jaxport"].update(size="100"), "'size' is missing or not a int"),
])
def test_a_damaged_manifest_raises_artifact_error_naming_the_field(damage: object, message: str) -> None:
    doc = json.loads(manifest().to_json())
    damage(doc)  # type: ignore[operator]
    with pytest.raises(ArtifactError, match=message):
        Manifest.from_json(json.dumps(doc).encode())


def test_a_manifest_that_is_not_json_raises_artifact_error() -> None:
    with pytest.raises(ArtifactError, match="manifest.json is not valid JSON"):
        Manifest.from_json(b"{not json")


def test_tree_difference_names_the_key_path_of_the_first_difference() -> None:
    other = TreeSpec.of_dict({"dense": TreeSpec.of_dict({"w": LEAF, "b": TreeSpec.of_list(LEAF)}), "scale": LEAF})
    assert tree_difference(TREE, TREE) is None
    assert tree_difference(TREE, other) == ("dense/b", "a list node where the weights have a leaf")


def test_a_function_whose_weights_differ_raises_naming_function_and_key_path() -> None:
    check_matches_weights("predict", TREE, WEIGHTS, TREE, LEAVES)
    with pytest.raises(BundleMismatchError, match=r"function 'predict' .* at 'dense/w': shape \(4, 4\)"):
        check_matches_weights("predict", TREE, WEIGHTS, TREE, [LEAVES[0], LeafSpec((4, 4), "float32"), LEAVES[2]])
    with pytest.raises(BundleMismatchError, match="at 'scale': dtype float32 where the weight is bfloat16"):
        check_matches_weights("predict", TREE, WEIGHTS, TREE, [LEAVES[0], LEAVES[1], LeafSpec((), "float32")])
    with pytest.raises(BundleMismatchError, match=r"the new weights .* at 'dense/w': shape \(b, 3\)"):
        check_matches_weights(None, TREE, WEIGHTS, TREE, [LEAVES[0], LeafSpec(("b", 3), "float32"), LEAVES[2]])
    with pytest.raises(BundleMismatchError, match="at 'dense': the pytree has dict keys"):
        check_matches_weights("loss", TREE, WEIGHTS, TreeSpec.of_dict(
            {"dense": TreeSpec.of_dict({"w": LEAF}), "scale": LEAF}), LEAVES[1:])


def _sharding(*partitions: tuple[str, ...]) -> NamedShardingRecord:
    mesh = AbstractMeshRecord((2, 4), ("data", "model"), (AxisType.AUTO, AxisType.AUTO))
    return NamedShardingRecord(mesh, PartitionSpecRecord(partitions))


def test_functions_must_agree_on_each_weights_sharding() -> None:
    row = _sharding((), ("model",))
    assert agreed_shardings(WEIGHTS, {"a": [None, row, None], "b": [None, None, None]}) == (None, row, None)
    with pytest.raises(BundleMismatchError, match="function 'b' .* at 'dense/w'.*recorded by function 'a'"):
        agreed_shardings(WEIGHTS, {"a": [None, row, None], "b": [None, _sharding(("data",), ()), None]})


def test_files_missing_extra_truncated_or_changed_raise_naming_the_file() -> None:
    m = manifest()
    good = {"manifest.json": 10, "predict.jaxport": 100, "params.safetensors": 200}
    check_files(m, good)
    with pytest.raises(ArtifactError, match="file params.safetensors is missing"):
        check_files(m, {"manifest.json": 10, "predict.jaxport": 100})
    with pytest.raises(ArtifactError, match="does not list: notes.txt"):
        check_files(m, {**good, "notes.txt": 2})
    with pytest.raises(ArtifactError, match="The bundle holds sub, which is not a regular file"):
        check_files(m, {**good, "sub": FOLDER})
    with pytest.raises(ArtifactError, match="predict.jaxport is truncated: 99 bytes"):
        check_files(m, {**good, "predict.jaxport": 99})
    with pytest.raises(ArtifactError, match="predict.jaxport is truncated: 99 bytes"):
        check_size("predict.jaxport", FileDigest(100, "aa"), 99, "bundle")
    with pytest.raises(ArtifactError, match="digest of the bundle's file predict.jaxport does not match"):
        check_digest("predict.jaxport", FileDigest(100, "aa"), "ab", "bundle")


def test_the_weights_header_must_list_the_manifests_weights_exactly() -> None:
    entries = {"dense/b": TensorEntry("F32", (3,), 0, 12), "dense/w": TensorEntry("F32", (4, 3), 12, 60),
               "scale": TensorEntry("BF16", (), 60, 62)}
    check_weights_header(WEIGHTS, entries, 62)
    cases = [({**entries, "x": TensorEntry("F32", (), 62, 66)}, "holds the weight 'x'"),
             ({k: v for k, v in entries.items() if k != "scale"}, "lacks the weight 'scale'"),
             ({**entries, "scale": TensorEntry("F16", (), 60, 62)}, "'scale' has dtype F16"),
             ({**entries, "dense/b": TensorEntry("F32", (1, 3), 0, 12)}, r"'dense/b' has shape \(1, 3\)"),
             ({**entries, "scale": TensorEntry("BF16", (), 60, 64)}, "bytes of the weight 'scale'")]
    for damaged, message in cases:
        with pytest.raises(ArtifactError, match=f"params.safetensors.*{message}"):
            check_weights_header(WEIGHTS, damaged, 62)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(st.text(alphabet=st.sampled_from("ab/~01e_ é"), max_size=5), max_size=4),
       st.lists(st.text(alphabet=st.sampled_from("ab/~01e_ é"), max_size=5), max_size=4))
def test_weight_names_round_trip_and_tell_distinct_key_paths_apart(a: list[str], b: list[str]) -> None:
    assert name_entries(weight_name(a)) == tuple(a)
    assert (weight_name(a) == weight_name(b)) == (a == b)


@pytest.mark.parametrize("name", ["manifest", "checks"])
def test_docstring_examples(name: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(f"jaxport.domain.bundle.{name}"))
    assert result.attempted > 0 and result.failed == 0


def test_the_bundle_summary_keeps_long_key_paths_and_metadata_within_a_line() -> None:
    from jaxport.domain.artifact.info import ArtifactInfo
    from jaxport.domain.bundle.info import BundleFunctionInfo, BundleInfo

    info = ArtifactInfo(
        fun_name="f", signature="(float32[3]) -> float32[3]", platforms=("cpu",), calling_convention_version=10,
        nr_devices=1, in_shardings=("unspecified",), out_shardings=("unspecified",), ordered_effects=(),
        unordered_effects=(), disabled_checks=(), vjp_order=0, module_size=100, stablehlo_version="1.15.0")
    deep = "/".join(f"level{i}" for i in range(40))
    bundle = BundleInfo("m", 1, (BundleFunctionInfo("f", "f.jaxport", True, info),),
                        (WeightRecord(deep, "float32", (3,), "float32", (3,)),), {"notes": "n" * 400})
    lines = str(bundle).splitlines()
    assert max(len(line) for line in lines) <= 160
    row = next(line for line in lines if line.lstrip().startswith("level0/level1/"))
    assert "..." in row and "/level39  float32  (3,)" in row
    assert lines[-1].startswith("metadata: {'notes': 'nnn") and lines[-1].endswith("...")
