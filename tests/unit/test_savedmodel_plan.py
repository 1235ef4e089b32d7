"""The SavedModel plan in the domain: names, dtypes, custom calls, refusals, the manifest (no TensorFlow)."""

from __future__ import annotations

import dataclasses

import pytest

from jaxport.domain.artifact import ArtifactRecord, AvalRecord, DType, TreeSpec
from jaxport.domain.bundle import FileDigest, WeightRecord
from jaxport.domain.errors import ArtifactError, ConversionError
from jaxport.domain.module_strings import module_strings
from jaxport.domain.safety import DisabledSafetyCheck
from jaxport.domain.savedmodel_manifest import SavedModelManifest
from jaxport.domain.savedmodel_names import input_names, output_names, tf_name
from jaxport.domain.savedmodel_plan import custom_call_targets, plan_function, plan_savedmodel

LEAF = TreeSpec.leaf()
VERSIONS = (4, 10)


def varint(value: int) -> bytes:
    """MLIR's prefix varint, for values below 2**7."""
    assert value < 128
    return bytes([(value << 1) | 1])


def bytecode(*strings: str, sections_before: bytes = b"") -> bytes:
    """A portable artifact's header and a string section holding ``strings``."""
    data = [s.encode() + b"\x00" for s in strings]
    section = varint(len(data)) + b"".join(varint(len(d)) for d in reversed(data)) + b"".join(data)
    return (b"ML\xefR" + varint(6) + b"StableHLO_v1.15.0\x00" + sections_before
            + bytes([0]) + varint(len(section)) + section)


def record(*, dtype: DType = DType.FLOAT32, strings: tuple[str, ...] = ("vhlo", "tanh_v2"),
           **changes: object) -> ArtifactRecord:
    in_tree = TreeSpec.of_tuple(TreeSpec.of_tuple(LEAF, TreeSpec.of_dict({"w": LEAF})), TreeSpec.of_dict({}))
    base = ArtifactRecord(
        function_name="f", in_tree=in_tree,
        in_avals=(AvalRecord(("b", "4"), dtype), AvalRecord(("4",), DType.FLOAT32)),
        out_tree=TreeSpec.of_dict({"y": LEAF}), out_avals=(AvalRecord(("b",), DType.FLOAT32),),
        in_shardings=(None, None), out_shardings=(None,), nr_devices=1, platforms=("cpu", "cuda"),
        ordered_effects=(), unordered_effects=(), disabled_checks=(), mlir_module_serialized=bytecode(*strings),
        calling_convention_version=10, module_kept_var_idx=(0, 1), uses_global_constants=False)
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_the_string_table_of_a_module_is_read_without_mlir() -> None:
    other_section = bytes([1]) + varint(3) + b"abc"
    assert module_strings(bytecode("vhlo", "lapack_sgetrf_ffi", sections_before=other_section)) == {
        "vhlo", "lapack_sgetrf_ffi"}
    with pytest.raises(ArtifactError, match="not MLIR bytecode"):
        module_strings(b"not a module")
    with pytest.raises(ArtifactError, match="runs past its end"):
        module_strings(bytecode("vhlo")[:-3])


def test_custom_calls_are_the_known_targets_in_the_string_table() -> None:
    strings = ("custom_call_v1", "lapack_sgetrf_ffi", "shape_assertion", "my_kernel", "not_a_target")
    assert custom_call_targets(record(strings=strings)) == {"lapack_sgetrf_ffi", "shape_assertion"}
    allowed = record(strings=strings, disabled_checks=(DisabledSafetyCheck.custom_call("my_kernel"),))
    assert custom_call_targets(allowed) == {"lapack_sgetrf_ffi", "shape_assertion", "my_kernel"}
    assert custom_call_targets(record(strings=("lapack_sgetrf_ffi",))) == frozenset()


def test_a_function_plan_gives_xla_call_module_what_the_artifact_records() -> None:
    plan = plan_function("f", record(), 0, allowed_custom_calls=(), versions=VERSIONS)
    assert [(t.name, t.dtype, t.shape) for t in plan.inputs] == [("arg0", "float32", (None, 4)),
                                                                ("arg1/w", "float32", (4,))]
    assert [(t.name, t.shape) for t in plan.outputs] == [("y", (None,))]
    assert plan.call.platforms == ("CPU", "CUDA") and plan.call.kept == (0, 1) and plan.call.version == 10
    assert not plan.call.use_shardy_partitioner and plan.vjp is None


def test_with_weights_the_caller_gives_the_other_arguments_only() -> None:
    plan = plan_function("f", record(), 1, allowed_custom_calls=(), versions=VERSIONS)
    assert [t.name for t in plan.inputs] == ["arg0/w"]
    assert plan.call.kept == (0, 1) and plan.caller.module_kept_var_idx == (0,)


@pytest.mark.parametrize("changes, reason", [
    ({"dtype": DType.INT4}, r"\(args\[0\]\): it is the dtype int4"),
    ({"dtype": DType.KEY_FRY}, r"a PRNG key array \(key<fry>\): export the function taking jax.random.key_data"),
    ({"dtype": DType.FLOAT8_E3M4}, "float8_e3m4, which TensorFlow's XlaCallModule cannot carry"),
    ({"nr_devices": 4}, "lowered for 4 devices"),
    ({"calling_convention_version": 11}, r"version 11 is outside \[4..10\]"),
    ({"platforms": ("cpu", "metal")}, r"the platforms \['metal'\]"),
    ({"strings": ("custom_call_v1", "lapack_sgetrf_ffi")}, r"custom-call targets \['lapack_sgetrf_ffi'\]"),
])
def test_what_xla_call_module_cannot_run_is_refused_naming_the_function(changes: dict[str, object],
                                                                        reason: str) -> None:
    with pytest.raises(ConversionError, match=r"Cannot convert the function 'f' to a TensorFlow SavedModel.*" + reason):
        plan_function("f", record(**changes), 0, allowed_custom_calls=(), versions=VERSIONS)  # type: ignore[arg-type]


def test_a_custom_call_the_user_allows_is_carried() -> None:
    lapack = record(strings=("custom_call_v1", "lapack_sgetrf_ffi"))
    plan_function("f", lapack, 0, allowed_custom_calls=("lapack_sgetrf_ffi",), versions=VERSIONS)
    plan_function("f", lapack, 0, allowed_custom_calls=("ALL",), versions=VERSIONS)


def test_names_escape_what_tensorflow_refuses_and_collisions_are_refused() -> None:
    assert tf_name("a b/c~1d") == "a_b/c_1d"
    tree = TreeSpec.of_tuple(TreeSpec.of_tuple(TreeSpec.of_list(LEAF, LEAF)), TreeSpec.of_dict({"k": LEAF, "": LEAF}))
    assert input_names("f", tree) == ("arg0/0", "arg0/1", "x_e", "k")
    assert output_names("f", TreeSpec.of_list(LEAF)) == ("output_0",)
    colliding = TreeSpec.of_tuple(TreeSpec.of_tuple(TreeSpec.of_dict({"a b": LEAF, "a_b": LEAF})), TreeSpec.of_dict({}))
    with pytest.raises(ConversionError, match="two inputs get the name 'arg0/a_b'"):
        input_names("f", colliding)


def test_the_default_must_name_a_function_and_one_function_is_the_default() -> None:
    one = plan_savedmodel([("serving_default", record(), False)], None, default=None,
                          allowed_custom_calls=(), versions=VERSIONS)
    assert one.default == "serving_default"
    with pytest.raises(ConversionError, match="default='g' names no function"):
        plan_savedmodel([("f", record(), False)], None, default="g", allowed_custom_calls=(), versions=VERSIONS)
    with pytest.raises(ConversionError, match="cannot name a signature"):
        plan_savedmodel([("serving_default", record(), False), ("f g", record(), False)], None, default=None,
                        allowed_custom_calls=(), versions=VERSIONS)


def test_the_manifest_round_trips_and_refuses_what_is_not_one() -> None:
    plan = plan_savedmodel([("f", record(), False)], None, default=None, allowed_custom_calls=(), versions=VERSIONS)
    plan = dataclasses.replace(plan, weights=(WeightRecord("dense/w", "float32", (4,), "float32", (4,)),))
    manifest = SavedModelManifest.of(plan, {"saved_model.pb": FileDigest(10, "ab")})
    again = SavedModelManifest.from_json(manifest.to_json())
    assert again == manifest and again.total_weight_bytes == 16
    assert again.signature("f").inputs == plan.functions[0].inputs
    with pytest.raises(ArtifactError, match="not a jaxport SavedModel manifest"):
        SavedModelManifest.from_json(b'{"format": "jaxport-savedmodel", "format_version": 1}')
    with pytest.raises(ArtifactError, match="newer than the newest"):
        SavedModelManifest.from_json(b'{"format": "jaxport-savedmodel", "format_version": 9}')
