"""Writing an artifact for a consumer (``consumer=``): the decision, without JAX or a child process."""

from __future__ import annotations

import dataclasses

import pytest

from jaxport.domain.artifact.consumers import find_consumer, stablehlo_for, verdict, written_for
from jaxport.domain.artifact.module_format import stablehlo_version
from jaxport.domain.artifact.record import JAX_VERSION_GENERATION, WRITTEN_SERIALIZATION_VERSION, ArtifactRecord
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
