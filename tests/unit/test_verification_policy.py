"""The verification policy: main's signature, the custom-call allowlist, verdict records."""

from __future__ import annotations

import pytest

from jaxport.domain.artifact.record import ArtifactRecord, AvalRecord, DType, EffectRecord, TreeSpec
from jaxport.domain.errors import ArtifactError
from jaxport.domain.artifact.safety import DisabledSafetyCheck
from jaxport.domain.artifact.verification import (
    TOKEN, MlirType, ModuleFacts, Verdict, check_custom_calls, check_main_types, expected_main_types, verdict,
    verdict_key
)


def record(*, platforms: tuple[str, ...] = ("cpu",), effects: int = 0,
           kept: tuple[int, ...] = (0, 1)) -> ArtifactRecord:
    avals = (AvalRecord(("b", "4"), DType.FLOAT32), AvalRecord((), DType.INT8))
    return ArtifactRecord(
        function_name="f", in_tree=TreeSpec.of_tuple(TreeSpec.of_tuple(TreeSpec.leaf(), TreeSpec.leaf()),
                                                     TreeSpec.of_dict({})),
        in_avals=avals, out_tree=TreeSpec.leaf(), out_avals=(AvalRecord(("b",), DType.BFLOAT16),),
        in_shardings=(None, None), out_shardings=(None,), nr_devices=1, platforms=platforms,
        ordered_effects=tuple(EffectRecord(f"E{i}") for i in range(effects)), unordered_effects=(),
        disabled_checks=(DisabledSafetyCheck.custom_call("evil"),), mlir_module_serialized=b"ML\xefR",
        calling_convention_version=10, module_kept_var_idx=kept, uses_global_constants=True)


def test_the_expected_signature_has_platform_index_tokens_then_kept_arrays() -> None:
    inputs, results = expected_main_types(record(platforms=("cpu", "cuda"), effects=1, kept=(0,)))
    assert [str(t) for t in inputs] == ["tensor<i32>", TOKEN, "tensor<?x4xf32>"]
    assert [str(t) for t in results] == [TOKEN, "tensor<?xbf16>"]


def test_a_matching_main_passes_and_each_difference_is_named() -> None:
    rec = record()
    good = ModuleFacts((MlirType("f32", (None, 4)), MlirType("i8", ())), (MlirType("bf16", (None,)),), ())
    assert check_main_types(rec, good) == ()
    wrong_dtype = ModuleFacts((MlirType("f64", (None, 4)), MlirType("i8", ())), good.results, ())
    assert check_main_types(rec, wrong_dtype) == (
        "argument 0 of main of 'f' has type tensor<?x4xf64>, but the record implies tensor<?x4xf32>",)
    static_where_symbolic = ModuleFacts((MlirType("f32", (3, 4)), MlirType("i8", ())), good.results, ())
    assert len(check_main_types(rec, static_where_symbolic)) == 1
    missing = ModuleFacts((MlirType("f32", (None, 4)),), good.results, ())
    assert "has 1 arguments, but the record implies 2" in check_main_types(rec, missing)[0]
    token_missing = ModuleFacts(good.inputs, good.results, ())
    assert check_main_types(record(effects=1), token_missing)


def test_custom_calls_are_checked_against_stable_targets_and_the_consumers_list_only() -> None:
    assert check_custom_calls(["lapack_sgeqrf_ffi", "shape_assertion"], allowed=()) == ()
    assert "'evil' is not allowed" in check_custom_calls(["evil"], allowed=())[0]
    assert check_custom_calls(["evil"], allowed=["evil"]) == ()
    assert check_custom_calls(["evil", "other"], allowed=["ALL"]) == ()
    assert "host callback" in check_custom_calls(["xla_ffi_python_cpu_callback"], allowed=())[0]


def test_the_artifacts_own_disabled_checks_do_not_allow_a_target() -> None:
    rec = record()
    facts = ModuleFacts((MlirType("f32", (None, 4)), MlirType("i8", ())),
                        (MlirType("bf16", (None,)),), ("evil", "evil"))
    found = verdict([(rec, facts)], allowed=())
    assert not found.ok and len(found.reasons) == 1
    assert verdict([(rec, facts)], allowed=("evil",)) == Verdict(True)


def test_facts_and_verdicts_round_trip_through_json_and_bad_reports_are_refused() -> None:
    facts = ModuleFacts((MlirType("f32", (None, 4)), MlirType(TOKEN, None)), (), ("a",))
    assert ModuleFacts.from_json(facts.to_json()) == facts
    for bad in (b"{}", b"[", b'{"inputs": [[1, null]], "results": [], "custom_calls": []}',
                b'{"inputs": [["f32", [-1]]], "results": [], "custom_calls": []}'):
        with pytest.raises(ArtifactError, match="malformed"):
            ModuleFacts.from_json(bad)
    v = Verdict(False, ("x",))
    assert Verdict.from_json(v.to_json()) == v


def test_the_operations_to_unfold_round_trip_and_are_left_out_of_the_json_when_there_are_none() -> None:
    plain = ModuleFacts((MlirType("f32", (4,)),), (), ())
    assert b"unfolded" not in plain.to_json()
    facts = ModuleFacts((MlirType("f32", (4,)),), (), ("cpu_lgamma_ffi",), False,
                        (("stablehlo.fma", "float32", 'loc("jit(f)/fma")'),))
    assert ModuleFacts.from_json(facts.to_json()) == facts
    for bad in ('[["stablehlo.fma", "float32"]]', '[["stablehlo.fma", "float32", 3]]', '{"a": 1}'):
        with pytest.raises(ArtifactError, match="unfolded"):
            ModuleFacts.from_json(b'{"inputs": [], "results": [], "custom_calls": [], "unfolded": ' + bad.encode() + b"}")
    assert Verdict.from_json(b"garbage") is None


def test_the_verdict_key_depends_on_the_kind_the_digest_and_each_thing_the_verdict_depends_on() -> None:
    assert verdict_key("v1", "ab", ["x", "y"]) == verdict_key("v1", "ab", ["x", "y"])
    assert verdict_key("v1", "ab", ["x"]) != verdict_key("v1", "ab", [])
    assert verdict_key("v1", "ab", []) != verdict_key("v1", "cd", [])
    assert verdict_key("v1", "ab") != verdict_key("c1", "ab")
    assert verdict_key("v1", "ab", ["x"], "") != verdict_key("v1", "ab", [], "x")  # the parts stay apart
    assert verdict_key("v1", "ab", [], "jaxlib 1") != verdict_key("v1", "ab", [], "jaxlib 2")
