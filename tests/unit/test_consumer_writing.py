"""Writing an artifact for a consumer (``consumer=``): the decision, without JAX or a child process."""

from __future__ import annotations

import dataclasses

import pytest

from jaxport.domain.artifact.consumers import find_consumer, stablehlo_for, verdict, written_for
from jaxport.domain.artifact.module_format import stablehlo_version
from jaxport.domain.artifact.record import (
    JAX_VERSION_GENERATION, WEAK_TYPE_GENERATION, WRITTEN_SERIALIZATION_VERSION, ArtifactRecord, AvalRecord, DType,
    TreeSpec
)
from jaxport.domain.errors import ArtifactError, ConsumerMismatchError, UsageError
from tests.helpers.consumer_records import module, record


class Writer:
    """A stand-in for the verifying child: writes a module for an older StableHLO by its header."""

    def __init__(self, refuse: str | None = None) -> None:
        self.asked: list[str] = []
        self.refuse = refuse

    def __call__(self, blob: bytes, version: str) -> bytes:
        self.asked.append(version)
        if self.refuse is not None:
            raise ValueError(self.refuse)
        return module(version)


def new_record() -> ArtifactRecord:
    """What JAX 0.12 writes: StableHLO 1.18.0, format generation 12 with its version, and a VJP."""
    vjp = record(mlir_module_serialized=module("1.18.0"), serialization_version=JAX_VERSION_GENERATION,
                 jax_version="0.12.0.1")
    return record(mlir_module_serialized=module("1.18.0"), serialization_version=JAX_VERSION_GENERATION,
                  jax_version="0.12.0.1", vjp=vjp)


@pytest.mark.parametrize("spec, version", [("jax==0.8.3", "1.13.5"), ("jax==0.9.2", "1.14.0"),
                                           ("tf==2.21", "1.15.0"), ("tensorflow==2.20", "1.15.0")])
def test_modules_are_written_for_the_consumers_stablehlo_and_the_check_then_agrees(spec: str, version: str) -> None:
    consumer = find_consumer(spec)
    assert stablehlo_for(consumer) == version
    writer = Writer()
    rec = new_record()
    out = written_for(rec, consumer, writer)
    assert writer.asked == [version, version]  # the function and its VJP
    assert out.vjp is not None
    for table in (out, out.vjp):
        assert stablehlo_version(table.mlir_module_serialized) == version
    assert verdict(out, consumer, short_device_count=False).ok
    assert not verdict(rec, find_consumer("jax==0.8.3"), short_device_count=False).ok


def test_readers_before_generation_12_get_the_format_version_they_know() -> None:
    out = written_for(new_record(), find_consumer("jax==0.9.2"), Writer())
    assert out.vjp is not None
    for table in (out, out.vjp):
        assert (table.serialization_version, table.jax_version) == (WRITTEN_SERIALIZATION_VERSION, None)
    kept = written_for(new_record(), find_consumer("jax==0.12.0.1"), Writer())
    assert (kept.serialization_version, kept.jax_version) == (JAX_VERSION_GENERATION, "0.12.0.1")


def test_a_module_older_than_the_consumers_stablehlo_is_left_as_it_is() -> None:
    writer = Writer()
    rec = record(mlir_module_serialized=module("1.13.0"))
    assert written_for(rec, find_consumer("jax==0.9.2"), writer) == rec
    assert writer.asked == []


def test_an_operation_the_consumers_stablehlo_lacks_is_named_in_a_typed_error() -> None:
    refusal = "the operation stablehlo.exponential ... does not exist in StableHLO 1.13.5"
    with pytest.raises(ConsumerMismatchError, match="JAX 0.8.3: the operation stablehlo.exponential .* does not "
                                                    "exist in StableHLO 1.13.5 \\(the StableHLO that JAX 0.8.3 reads") as caught:
        written_for(new_record(), find_consumer("jax==0.8.3"), Writer(refuse=refusal))
    assert caught.value.function == "f" and caught.value.consumer == "JAX 0.8.3"


def test_a_module_that_does_not_parse_stays_an_artifact_error() -> None:
    def broken(blob: bytes, version: str) -> bytes:
        raise ArtifactError("The module does not parse")

    with pytest.raises(ArtifactError):
        written_for(new_record(), find_consumer("jax==0.8.3"), broken)


def test_a_calling_convention_or_a_field_the_consumer_cannot_read_is_refused_with_the_checks_reasons() -> None:
    with pytest.raises(ConsumerMismatchError, match="calling convention 10 is outside TensorFlow 2.18.0's window"):
        written_for(new_record(), find_consumer("tf==2.18"), Writer())
    with pytest.raises(ConsumerMismatchError, match="generation 5 for its device count"):
        written_for(new_record(), find_consumer("jax==0.8.1"), Writer())
    old = dataclasses.replace(record(), calling_convention_version=8)
    with pytest.raises(ConsumerMismatchError, match="calling convention 8 is outside JAX 0.9.2's window"):
        written_for(old, find_consumer("jax==0.9.2"), Writer())


@pytest.mark.parametrize("spec", ["jax0.9.2", "jax==", "torch==2.0", ""])
def test_a_malformed_consumer_is_a_usage_error(spec: str) -> None:
    with pytest.raises(UsageError, match="RUNTIME==VERSION"):
        find_consumer(spec)


def test_an_unknown_consumer_is_a_usage_error_listing_the_known() -> None:
    with pytest.raises(UsageError, match="knows no jax 0.6.0.*0.8.3"):
        find_consumer("jax==0.6.0")


def weak_record() -> ArtifactRecord:
    """``(float32[], float32[]) -> float32[]`` as JAX 0.12.1 writes it: the first input weak-typed."""
    weak, strong = AvalRecord((), DType.FLOAT32, weak_type=True), AvalRecord((), DType.FLOAT32)
    leaf = TreeSpec.leaf()
    return record(in_tree=TreeSpec.of_tuple(TreeSpec.of_tuple(leaf, leaf), TreeSpec.of_dict({})),
                  in_avals=(weak, strong), out_avals=(weak,), in_shardings=(None, None), module_kept_var_idx=(0, 1),
                  mlir_module_serialized=module("1.22.0"), serialization_version=WEAK_TYPE_GENERATION,
                  jax_version="0.12.1")


@pytest.mark.parametrize("spec, version", [("jax==0.12.0.1", 12), ("jax==0.11.1", 12), ("jax==0.10.2", 3)])
def test_readers_before_generation_13_get_strong_avals_kept_apart_as_their_jax_writes_them(spec: str,
                                                                                            version: int) -> None:
    rec = weak_record()
    consumer = find_consumer(spec)
    notes = verdict(rec, consumer, short_device_count=False).notes
    assert any("arg0, output_0 lose their weak type" in n for n in notes), notes
    out = written_for(rec, consumer, Writer())
    assert out.serialization_version == version
    # Strong now, and the weak entry (the first of the unique table) still apart from its strong twin.
    assert [(a.weak_type, a.variant) for a in out.in_avals + out.out_avals] == [(False, 0), (False, 1), (False, 0)]
    found = verdict(out, consumer, short_device_count=False)
    assert found.ok and not any("weak" in n for n in found.notes)


def test_generation_13_readers_keep_the_weak_types() -> None:
    rec = weak_record()
    assert written_for(rec, find_consumer("jax==0.12.1"), Writer()) == rec
    assert not any("weak" in n for n in verdict(rec, find_consumer("jax==0.12.1"), short_device_count=False).notes)


@pytest.mark.parametrize("target", ["cpu_lgamma_ffi", "cu_digamma_ffi", "hip_lgamma_ffi"])
def test_a_custom_call_newer_than_the_consumer_is_refused_naming_function_target_and_versions(target: str) -> None:
    rec = record(mlir_module_serialized=module("1.22.0") + b"\x0e" + target.encode() + b"\x00",
                 serialization_version=WEAK_TYPE_GENERATION, jax_version="0.12.1")
    assert verdict(rec, find_consumer("jax==0.12.1"), short_device_count=False).ok
    assert written_for(rec, find_consumer("jax==0.12.1"), Writer()) == rec
    for spec in ("jax==0.12.0.1", "jax==0.11.2", "tf==2.21"):
        found = verdict(rec, find_consumer(spec), short_device_count=False)
        assert not found.ok and any(target in r for r in found.reasons)
        with pytest.raises(ConsumerMismatchError, match=rf"function 'f'.*{target}, which JAX 0\.12\.1 first "
                                                        rf"allows and {find_consumer(spec)}"):
            # Each module written for the consumer's StableHLO keeps its call (the header changes).
            written_for(rec, find_consumer(spec), lambda blob, version: module(version) + blob.split(b"\x00...")[1])
