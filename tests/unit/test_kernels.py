"""Pallas kernels for older consumers: the Mosaic versions of the table and the shared decision (no JAX)."""

from __future__ import annotations

import pytest

from jaxport.domain.artifact.consumers import CONSUMERS, find_consumer, needs_kernels, verdict, written_for
from jaxport.domain.artifact.kernels import (
    BYTECODE, TEXT, Kernel, kernel_reasons, kernels_from_json, may_hold_kernels, older_than_writer)
from jaxport.domain.errors import ArtifactError, ConsumerMismatchError
from tests.helpers.consumer_records import module, record

KERNEL_MODULE = module("1.15.0") + b"tpu_custom_call"


@pytest.mark.parametrize("spec, mosaic", [
    ("jax==0.7.0", 4), ("jax==0.8.0", 7), ("jax==0.9.0", 8), ("jax==0.9.2", 9), ("jax==0.10.0", 9),
    ("jax==0.10.2", 11), ("jax==0.11.0", 13), ("jax==0.11.1", 13), ("jax==0.11.2", 15), ("jax==0.12.0", 15), ("jax==0.12.0.1", 15),
    ("jax==0.12.1", 15), ("tf==2.21", None)])
def test_each_jax_release_records_the_mosaic_version_it_exports(spec: str, mosaic: int | None) -> None:
    consumer = find_consumer(spec)
    assert consumer.mosaic == mosaic
    if mosaic is not None:
        assert f"Mosaic {mosaic}: " in consumer.source and "tpu_custom_call.py" in consumer.source


def test_the_mosaic_versions_never_go_back_from_one_release_to_the_next() -> None:
    versions = [c.mosaic for c in CONSUMERS if c.runtime == "jax"]
    assert all(v is not None for v in versions)
    assert versions == sorted(versions)  # type: ignore[type-var]


def test_a_newer_mosaic_kernel_is_refused_naming_the_kernel_and_both_versions() -> None:
    kernel = Kernel("tpu_custom_call", "matmul", 15, TEXT)
    found = verdict(record(mlir_module_serialized=KERNEL_MODULE), find_consumer("jax==0.10.2"),
                    short_device_count=False, kernels=[kernel])
    assert not found.ok
    assert found.reasons == ("the Pallas kernel 'matmul' (tpu_custom_call, Mosaic version 15): JAX 0.10.2 "
                             "reads Mosaic up to version 11 (the version it exports: "
                             "jax/_src/tpu_custom_call.py at its tag)",)
    assert verdict(record(), find_consumer("jax==0.12.0.1"), short_device_count=False, kernels=[kernel],
                   writer_jax="0.12.0.1").ok


def test_a_bytecode_kernel_is_read_only_by_its_writers_jax_and_newer() -> None:
    bytecode = [Kernel("tpu_custom_call", "k", 11, BYTECODE, "MLIR24.0.0git")]
    assert kernel_reasons(bytecode, "JAX 0.10.2", 11, "0.12.0.1", "0.10.2") == [
        "the Pallas kernel 'k' (tpu_custom_call, Mosaic version 11) is MLIR bytecode written by MLIR24.0.0git "
        "with JAX 0.12.0.1: an older JAX's MLIR does not read newer bytecode, so JAX 0.10.2 is not known to "
        "read it (serialize(consumer=...) writes it as MLIR text)"]
    assert "with JAX not recorded" in kernel_reasons(bytecode, "JAX 0.10.2", 11, None, "0.10.2")[0]
    assert kernel_reasons(bytecode, "JAX 0.10.2", 11, "0.10.2", "0.10.2") == []
    assert kernel_reasons(bytecode, "JAX 0.11.0", 13, "0.10.2", "0.11.0") == []
    assert kernel_reasons([Kernel("tpu_custom_call", "k", 11, TEXT)], "JAX 0.10.2", 11, "0.12.0.1", "0.10.2") == []


def test_releases_compare_as_pip_compares_them() -> None:
    assert older_than_writer("0.9.2", "0.10.0") and older_than_writer("0.12.0", "0.12.0.1")
    assert not older_than_writer("0.12.0.1", "0.12.0.1") and not older_than_writer("2.21", "2.21.0")
    assert older_than_writer(None, "0.12.0.1") and older_than_writer("0.10.2", None)


def test_tensorflow_and_gpu_kernels_of_another_jax_are_refused() -> None:
    assert kernel_reasons([Kernel("tpu_custom_call", "k", 11)], "TensorFlow 2.21.0", None, "0.12.0.1", None) == [
        "the Pallas kernel 'k' (tpu_custom_call, Mosaic version 11): the Mosaic versions that TensorFlow "
        "2.21.0 reads are not known"]
    gpu = [Kernel("mosaic_gpu_v2", "add", None)]
    assert "only the JAX that wrote it (0.12.0.1)" in kernel_reasons(gpu, "JAX 0.10.2", 11, "0.12.0.1", "0.10.2")[0]
    assert kernel_reasons(gpu, "JAX 0.12.0.1", 15, "0.12.0.1", "0.12.0.1") == []


class KernelWriter:
    """A stand-in for the verifying child: reports one Mosaic kernel, written for the version asked."""

    def __init__(self, version: int, refuse: str | None = None) -> None:
        self.version, self.refuse = version, refuse
        self.asked: list[tuple[int | None, bool]] = []

    def __call__(self, blob: bytes, mosaic: int | None, text: bool) -> tuple[bytes, tuple[Kernel, ...]]:
        self.asked.append((mosaic, text))
        if self.refuse is not None:
            raise ValueError(self.refuse)
        version = self.version if mosaic is None else min(self.version, mosaic)
        return blob, (Kernel("tpu_custom_call", "add", version, TEXT if text else BYTECODE, "MLIR24.0.0git"),)


def test_the_writer_asks_for_the_consumers_mosaic_only_where_a_module_may_hold_a_kernel() -> None:
    writer = KernelWriter(15)
    rec = record(mlir_module_serialized=KERNEL_MODULE, vjp=record())
    assert needs_kernels(rec) and not needs_kernels(record())
    written_for(rec, find_consumer("jax==0.10.2"), lambda blob, version: blob, writer, writer_jax="0.12.0.1")
    assert writer.asked == [(11, True)]  # the function's module; its VJP holds no kernel


def test_the_writer_asks_for_text_only_for_a_consumer_older_than_itself() -> None:
    writer = KernelWriter(15)
    rec = record(mlir_module_serialized=KERNEL_MODULE)
    for spec in ("jax==0.11.2", "jax==0.12.0.1"):
        written_for(rec, find_consumer(spec), lambda blob, version: blob, writer, writer_jax="0.12.0.1")
    written_for(rec, find_consumer("jax==0.12.0.1"), lambda blob, version: blob, writer)  # writer not recorded
    assert writer.asked == [(15, True), (15, False), (15, True)]


def test_a_bytecode_kernel_the_writer_kept_is_refused_for_an_older_consumer() -> None:
    def keeps_bytecode(blob: bytes, mosaic: int | None, text: bool) -> tuple[bytes, tuple[Kernel, ...]]:
        return blob, (Kernel("tpu_custom_call", "add", mosaic, BYTECODE, "MLIR24.0.0git"),)

    with pytest.raises(ConsumerMismatchError, match="'add' .* is MLIR bytecode written by MLIR24.0.0git"):
        written_for(record(mlir_module_serialized=KERNEL_MODULE), find_consumer("jax==0.10.2"),
                    lambda blob, version: blob, keeps_bytecode, writer_jax="0.12.0.1")


def test_a_kernel_the_child_cannot_write_is_a_consumer_mismatch() -> None:
    writer = KernelWriter(15, refuse="the Pallas kernel 'add' cannot be written for Mosaic version 9")
    with pytest.raises(ConsumerMismatchError, match="JAX 0.9.2: the Pallas kernel 'add' cannot be written"):
        written_for(record(mlir_module_serialized=KERNEL_MODULE), find_consumer("jax==0.9.2"),
                    lambda blob, version: blob, writer)


def test_kernels_of_the_verifying_process_are_bounds_checked() -> None:
    assert kernels_from_json(None) == ()
    assert kernels_from_json([{"target": "tpu_custom_call", "name": "k", "mosaic": 11}]) == (
        Kernel("tpu_custom_call", "k", 11),)
    text = Kernel("tpu_custom_call", "k", 11, TEXT)
    assert kernels_from_json([text.to_json()]) == (text,)
    for bad in ([{"target": "tpu_custom_call", "name": "k", "mosaic": "11"}], {"target": 1}, [3],
                [dict(text.to_json(), form="asm")], [dict(text.to_json(), producer=24)]):
        with pytest.raises(ArtifactError):
            kernels_from_json(bad)
    assert may_hold_kernels(KERNEL_MODULE) and not may_hold_kernels(module("1.15.0"))
