"""The SavedModel plan in the domain: names, dtypes, custom calls, refusals (no TensorFlow)."""

from __future__ import annotations

import dataclasses

import pytest

from jaxport.domain.artifact.record import ArtifactRecord, AvalRecord, DType, TreeSpec
from jaxport.domain.calls.signature import Signature
from jaxport.domain.errors import ConversionError
from jaxport.domain.calls.front import with_weights_bound
from jaxport.domain.targets.savedmodel import signature_name, tf_name
from jaxport.domain.targets.savedmodel import plan_function
from jaxport.domain.targets.plan import refuse_custom_calls, refuse_record
from jaxport.domain.targets.savedmodel import PLAN, SavedModelOptions, check_host

LEAF = TreeSpec.leaf()
VERSIONS = (4, 10)
MODULE = b"ML\xefR the module bytes, carried unchanged"


def record(*, dtype: DType = DType.FLOAT32, **changes: object) -> ArtifactRecord:
    in_tree = TreeSpec.of_tuple(TreeSpec.of_tuple(LEAF, TreeSpec.of_dict({"w": LEAF})), TreeSpec.of_dict({}))
    base = ArtifactRecord(
        function_name="f", in_tree=in_tree,
        in_avals=(AvalRecord(("b", "4"), dtype), AvalRecord(("4",), DType.FLOAT32)),
        out_tree=TreeSpec.of_dict({"y": LEAF}), out_avals=(AvalRecord(("b",), DType.FLOAT32),),
        in_shardings=(None, None), out_shardings=(None,), nr_devices=1, platforms=("cpu", "cuda"),
        ordered_effects=(), unordered_effects=(), disabled_checks=(), mlir_module_serialized=MODULE,
        calling_convention_version=10, module_kept_var_idx=(0, 1), uses_global_constants=False)
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def signature_of(r: ArtifactRecord, nr_weights: int = 0) -> Signature:
    return with_weights_bound(r.signature, nr_weights)


def plan(r: ArtifactRecord, nr_weights: int = 0, *, custom_calls: tuple[str, ...] = (),
         allowed: tuple[str, ...] = ()) -> object:
    """The plan's refusals in the pipeline's order, then the build plan."""
    options = SavedModelOptions(allowed_custom_calls=allowed)
    refuse_record(PLAN, "f", r, nr_weights=nr_weights)
    assert PLAN.refuse_function is not None
    PLAN.refuse_function(signature_of(r, nr_weights), r, options)
    refuse_custom_calls(PLAN, "f", custom_calls, PLAN.allowed_custom_calls(options))
    return plan_function("f", r, signature_of(r, nr_weights), uses_shardy=False, versions=VERSIONS)


def test_a_function_plan_gives_xla_call_module_what_the_artifact_records() -> None:
    p = plan_function("f", record(), signature_of(record()), uses_shardy=False, versions=VERSIONS)
    assert [(t.name, t.dtype, t.shape) for t in p.inputs] == [("arg0", "float32", (None, 4)),
                                                             ("arg1/w", "float32", (4,))]
    assert [(t.name, t.shape) for t in p.outputs] == [("y", (None,))]
    assert p.call.platforms == ("CPU", "CUDA") and p.call.kept == (0, 1) and p.call.version == 10
    assert not p.call.use_shardy_partitioner and p.vjp is None
    assert plan_function("f", record(), signature_of(record()), uses_shardy=True,
                         versions=VERSIONS).call.use_shardy_partitioner


def test_with_weights_the_caller_gives_the_other_arguments_only() -> None:
    p = plan_function("f", record(), signature_of(record(), 1), uses_shardy=False, versions=VERSIONS)
    assert [t.name for t in p.inputs] == ["arg0/w"]
    assert p.call.kept == (0, 1) and p.caller.in_avals == record().in_avals[1:]


@pytest.mark.parametrize("changes, reason", [
    ({"dtype": DType.INT4}, r"\(args\[0\]\): int4\[b,4\] is the dtype int4, for which TensorFlow's XlaCallModule "
                            "returns wrong values"),
    ({"dtype": DType.KEY_FRY}, r"a PRNG key array \(key<fry>\): export the function taking jax.random.key_data"),
    ({"dtype": DType.FLOAT8_E3M4}, "float8_e3m4, which a TensorFlow SavedModel cannot hold"),
    ({"nr_devices": 4}, "its module is for 4 devices"),
    ({"calling_convention_version": 11}, r"version 11 is outside \[4..10\]"),
    ({"platforms": ("cpu", "metal")}, r"the platforms \['metal'\]"),
    ({"platforms": ("metal",)}, r"exported for \['metal'\] only"),
])
def test_what_xla_call_module_cannot_run_is_refused_naming_the_function(changes: dict[str, object],
                                                                        reason: str) -> None:
    with pytest.raises(ConversionError, match=r"Cannot convert the function 'f' to a TensorFlow SavedModel.*" + reason):
        plan(record(**changes))  # type: ignore[arg-type]


def test_a_custom_call_tensorflow_lacks_is_refused_unless_the_user_allows_it_and_then_carried() -> None:
    with pytest.raises(ConversionError, match="its module calls the custom call 'lapack_sgetrf_ffi', a LAPACK"):
        plan(record(), custom_calls=("lapack_sgetrf_ffi",))
    for allowed in (("lapack_sgetrf_ffi",), ("ALL",)):
        carried = plan(record(), custom_calls=("lapack_sgetrf_ffi", "shape_assertion"), allowed=allowed)
        assert carried.call.module == MODULE  # type: ignore[attr-defined]  # the op gets the module as it is


def test_names_of_variables_and_signatures_are_ones_tensorflow_takes() -> None:
    assert tf_name("a b/c~1d") == "a_b/c_1d"
    assert signature_name("predict") == "predict"
    assert signature_name("<lambda>") == ".3clambda.3e"
    assert signature_name("serving_default") == "serving_default_"


def test_the_host_check_refuses_a_function_exported_for_none_of_this_machines_platforms() -> None:
    from jaxport.errors import PlatformMismatchError

    details = {"functions": {"f": {"platforms": ["cuda"], "platform_check_disabled": False}}}
    check_host(details, {"platforms": ["cuda"]}, "m")
    with pytest.raises(PlatformMismatchError):
        check_host(details, {"platforms": ["cpu"]}, "m")
    check_host({"functions": {"f": {"platforms": ["cuda"], "platform_check_disabled": True}}},
               {"platforms": ["cpu"]}, "m")
