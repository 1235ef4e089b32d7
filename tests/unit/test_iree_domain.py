"""What converting for IREE requires, and what an IREE directory's manifest says, on records (no JAX, no IREE)."""

from __future__ import annotations

import dataclasses

import pytest

from jaxport.domain.artifact.record import ArtifactRecord, AvalRecord, DType, EffectRecord, TreeSpec
from jaxport.domain.bundle.manifest import WeightRecord
from jaxport.domain.checked_directory import FileDigest, check_digest, check_listing
from jaxport.domain.errors import ArtifactError, ConversionError
from jaxport.domain.artifact.calling_convention import MAXIMUM_VERSION
from jaxport.domain.converted.manifest import FORMAT_VERSION, ConvertedFunction, ConvertedManifest, Variant, WeightsTable
from jaxport.domain.calls.front import dimension_variables, with_weights_bound
from jaxport.domain.targets.iree import PLAN, SUFFIX, check_parameter_names, details_of, target_of
from jaxport.domain.targets.plan import refuse
from jaxport.domain.converted.static_shapes import platform_index, static_shapes, variant_file
from jaxport.domain.targets.iree import IreeTarget, check_runs_here
from jaxport.domain.errors import TargetMismatchError, UncompiledSizeError

LEAF = TreeSpec.leaf()
WEIGHTS = TreeSpec.of_dict({"w": LEAF})


def record(in_avals: tuple[AvalRecord, ...], *, weights: bool = False, constraints: tuple[str, ...] = (),
           out: tuple[AvalRecord, ...] = (AvalRecord(("b", "t"), DType.FLOAT32),)) -> ArtifactRecord:
    args = (WEIGHTS,) * weights + (LEAF,) * (len(in_avals) - weights)
    return ArtifactRecord(
        function_name="predict", in_tree=TreeSpec.of_tuple(TreeSpec.of_tuple(*args), TreeSpec.of_dict({})),
        in_avals=in_avals, out_tree=TreeSpec.of_tuple(*(LEAF,) * len(out)), out_avals=out,
        in_shardings=(None,) * len(in_avals), out_shardings=(None,) * len(out), nr_devices=1, platforms=("cpu",),
        ordered_effects=(), unordered_effects=(), disabled_checks=(), mlir_module_serialized=b"",
        calling_convention_version=MAXIMUM_VERSION, module_kept_var_idx=tuple(range(len(in_avals))),
        uses_global_constants=any(not d.isdigit() for a in in_avals for d in a.shape), constraints=constraints)


IDS = record((AvalRecord(("4", "3"), DType.FLOAT32), AvalRecord(("b", "t"), DType.INT32)), weights=True,
             constraints=("t <= 16",))
X86 = IreeTarget("host", "host", "znver4", ("+avx2", "+avx512f", "-amx-tile", "+movdir64b", "-movdir64b"),
                 "x86_64-unknown-unknown-eabi-elf", "embedded-elf-x86_64")
ARM = IreeTarget("generic", "aarch64-linux-gnu", "generic", ("+reserve-x18",),
                 "aarch64-unknown-unknown-eabi-elf", "embedded-elf-arm_64")


def test_each_binding_gives_the_static_shapes_of_every_input_and_output() -> None:
    assert dimension_variables(IDS.signature) == ("b", "t")
    one, two = static_shapes("predict", IDS, [{"b": 1, "t": 4}, {"t": 16, "b": 2}], nr_weights=1, runtime="IREE")
    assert (one.dims, one.in_shapes, one.out_shapes) == ((("b", 1), ("t", 4)), ((4, 3), (1, 4)), ((1, 4),))
    assert two.dims == (("b", 2), ("t", 16))


@pytest.mark.parametrize(("bindings", "message"), [
    (None, r"'predict' to IREE: it has symbolic shapes \(dimension variables b, t\).*--dims predict:b=8,t=8"),
    ([{"b": 1}], r"the binding \{'b': 1\} lacks t, one of its dimension variables \(b, t\)"),
    ([{"b": 1, "t": 2, "n": 3}], r"names n, which is not among its dimension variables"),
    ([{"b": 1, "t": 2.5}], r"gives t the value 2.5, which is not a size"),
    ([{"b": 1, "t": 17}], r"violates its shape constraints: .*constraint t <= 16.*args\[0\]\.shape = \(b, t\)"),
    ([{"b": 0, "t": 2}], r"violates its shape constraints: .*Expected value >= 1 for dimension variable 'b'"),
    ([{"b": 1, "t": 2}, {"t": 2, "b": 1}], r"the binding \{'t': 2, 'b': 1\} is given twice"),
])
def test_a_binding_that_does_not_fit_the_function_is_refused_naming_it(bindings: list[dict[str, float]] | None,
                                                                       message: str) -> None:
    with pytest.raises(ConversionError, match=message) as info:
        static_shapes("predict", IDS, bindings, nr_weights=1, runtime="IREE")  # type: ignore[arg-type]
    assert info.value.function == "predict"


def test_a_static_function_compiles_once_and_takes_no_bindings() -> None:
    static = record((AvalRecord(("2", "3"), DType.FLOAT32),), out=(AvalRecord(("2",), DType.FLOAT32),))
    assert [s.in_shapes for s in static_shapes("f", static, None, runtime="IREE")] == [((2, 3),)]
    with pytest.raises(ConversionError, match="it has no dimension variables; give it no dims"):
        static_shapes("f", static, [{"b": 1}], runtime="IREE")


def test_only_shape_assertions_pass_among_custom_calls() -> None:
    static = record((AvalRecord(("2",), DType.FLOAT32),), out=(AvalRecord(("2",), DType.FLOAT32),))
    refuse(PLAN, "f", static, nr_weights=0, custom_calls=["shape_assertion"])
    for target, why in [("lapack_sgetrf_ffi", "LAPACK kernel of JAX's CPU runtime"),
                        ("xla_ffi_python_cpu_callback", "a host callback"),
                        ("my_kernel", "a kernel of another runtime")]:
        with pytest.raises(ConversionError, match=f"'f' to IREE: its module calls the custom call '{target}', "
                                                  f".*{why}"):
            refuse(PLAN, "f", static, nr_weights=0, custom_calls=["shape_assertion", target])
    refuse(PLAN, "f", static, nr_weights=0, custom_calls=["my_kernel"], allowed_custom_calls=["my_kernel"])


def test_what_the_record_says_that_iree_cannot_run_is_refused() -> None:
    static = record((AvalRecord(("2",), DType.FLOAT32),), out=(AvalRecord(("2",), DType.FLOAT32),))
    cases = [
        (dataclasses.replace(static, platforms=("cuda", "tpu")), r"exported for \['cuda', 'tpu'\] only"),
        (dataclasses.replace(static, nr_devices=2), "its module is for 2 devices"),
        (dataclasses.replace(static, ordered_effects=(EffectRecord("Ordered"),)), r"ordered effects \(Ordered\)"),
        (dataclasses.replace(static, in_avals=(AvalRecord(("2",), DType.INT4),)),
         r"\(args\[0\]\): int4\[2\] is the dtype int4, which IREE cannot hold"),
        (dataclasses.replace(static, out_avals=(AvalRecord(("2",), DType.KEY_FRY),)),
         r"\(flat result 0\): key<fry>\[2\] is a PRNG key array"),
    ]
    for bad, message in cases:
        with pytest.raises(ConversionError, match=message):
            refuse(PLAN, "f", bad, nr_weights=0, custom_calls=())
    keys = dataclasses.replace(static, in_avals=(AvalRecord(("2",), DType.KEY_FRY),))
    refuse(PLAN, "f", keys, nr_weights=1, custom_calls=())  # a weight may be a key array, read as its key data
    with pytest.raises(ConversionError, match="key<fry>"):
        refuse(PLAN, "f", keys, nr_weights=0, custom_calls=())
    assert platform_index(dataclasses.replace(static, platforms=("cuda", "cpu"))) == 1
    assert platform_index(static) is None


def manifest() -> ConvertedManifest:
    variants = (Variant(variant_file("predict", {"b": 1, "t": 4}, SUFFIX), (("b", 1), ("t", 4))),
                Variant(variant_file("predict", {"b": 8, "t": 16}, SUFFIX), (("b", 8), ("t", 16))))
    weights = (WeightRecord("w", "float32", (4, 3), "float32", (4, 3), sha256="ab"),)
    files = {v.file: FileDigest(100, "00") for v in variants}
    files["params.safetensors"] = FileDigest(120, "11")
    sig = with_weights_bound(IDS.signature, 1)
    return ConvertedManifest("iree", details_of(X86, "3.13.0"), (ConvertedFunction(sig, variants),),
                             WeightsTable(WEIGHTS, weights, "params.safetensors", "cd"), files=files)


def test_the_manifest_round_trips_through_its_json() -> None:
    m = manifest()
    assert [v.file for v in m.functions[0].variants] == ["predict.b=1,t=4.vmfb", "predict.b=8,t=16.vmfb"]
    assert ConvertedManifest.from_json(m.to_json()) == m
    assert target_of(m.target_details) == X86


@pytest.mark.parametrize(("edit", "message"), [
    (lambda text: text.replace('"jaxport-converted"', '"jaxport-bundle"'), "the format 'jaxport-bundle' is not"),
    (lambda text: text.replace('"jaxport-converted"', '"jaxport-iree"'), "an older jaxport converted: convert"),
    (lambda text: text.replace(f'"format_version": {FORMAT_VERSION}', f'"format_version": {FORMAT_VERSION + 1}'),
     f"format version {FORMAT_VERSION + 1} is newer than {FORMAT_VERSION}"),
    (lambda text: text.replace('"b": 1', '"b": -1'), "the dimension values are not sizes"),
    (lambda text: text[:50], "is not valid JSON"),
])
def test_a_damaged_manifest_is_refused_naming_the_field(edit: object, message: str) -> None:
    text = manifest().to_json().decode()
    with pytest.raises(ArtifactError, match=message):
        ConvertedManifest.from_json(edit(text).encode())  # type: ignore[operator]


def test_a_size_not_compiled_names_the_function_the_variable_and_the_bindings() -> None:
    function = manifest().functions[0]
    assert function.variant_for({"b": 8, "t": 16}).file == "predict.b=8,t=16.vmfb"
    with pytest.raises(UncompiledSizeError, match=r"No module of 'predict' was compiled for t = 5; it was "
                                                  r"compiled for \{b=1, t=4\}, \{b=8, t=16\}") as info:
        function.variant_for({"b": 1, "t": 5})
    assert (info.value.function, info.value.variable) == ("predict", "t")


def test_the_listing_must_hold_exactly_the_manifest_files_at_their_sizes() -> None:
    m = manifest()
    good = {"manifest.json": 10, **{name: d.size for name, d in m.files.items()}}
    check_listing(m.files, good, "manifest.json", "directory", folders=True)
    for entries, message in [
        ({**good, "extra.bin": 3}, "does not list: extra.bin"),
        ({k: v for k, v in good.items() if k != "params.safetensors"}, "params.safetensors is missing"),
        ({**good, "predict.b=1,t=4.vmfb": 99}, "predict.b=1,t=4.vmfb is truncated: 99 bytes"),
        ({**good, "params.safetensors": -1}, "params.safetensors is not a regular file"),
    ]:
        with pytest.raises(ArtifactError, match=message):
            check_listing(m.files, entries, "manifest.json", "directory", folders=True)
    with pytest.raises(ArtifactError, match="predict.b=1,t=4.vmfb does not match its manifest"):
        check_digest("predict.b=1,t=4.vmfb", m.files["predict.b=1,t=4.vmfb"], "ff", "directory")


def test_a_machine_runs_a_directory_of_its_architecture_and_cpu_features() -> None:
    assert X86.required_features == ("avx2", "avx512f")  # the last mention of a feature decides
    check_runs_here(X86, "m", "x86_64", {"avx2": True, "avx512f": True, "amx-tile": False})
    check_runs_here(X86, "m", "AMD64", {})  # features this machine does not report are not checked
    with pytest.raises(TargetMismatchError, match="m was compiled for x86_64 .*; this CPU lacks avx512f"):
        check_runs_here(X86, "m", "x86_64", {"avx2": True, "avx512f": False})
    with pytest.raises(TargetMismatchError, match=r"m was compiled for aarch64 \(CPU generic, triple "
                                                  r"aarch64-unknown-unknown-eabi-elf\), which this machine "
                                                  r"\(x86_64\) cannot run"):
        check_runs_here(ARM, "m", "x86_64", {})
    check_runs_here(ARM, "m", "arm64", {})


def test_iree_finds_a_weight_by_any_key_its_header_spells_in_utf8() -> None:
    check_parameter_names(["dense/w", "ünï~1côdé"], '{"ünï~1côdé":{}, "dense/w":{}}'.encode())
    with pytest.raises(ConversionError, match=r"""the weight 'a"b' has a key with a quote"""):
        check_parameter_names(['a"b'], b"")
    with pytest.raises(ConversionError, match="spells the key 'ünï' with JSON escapes.*save the bundle again"):
        check_parameter_names(["ünï"], b'{"\\u00fcn\\u00ef":{}}')
