"""The table of consumers' windows and the verdict on an artifact, without JAX."""

from __future__ import annotations

import pytest

from jaxport.domain.artifact.record import ArtifactRecord
from jaxport.domain.artifact.sharding import (
    AbstractMeshRecord, AxisType, NamedShardingRecord, PartitionSpecRecord
)
from jaxport.domain.artifact.consumers import CONSUMERS, find_consumer, verdict
from jaxport.domain.errors import UsageError
from tests.helpers.consumer_records import module, record


def check(consumer: str, rec: ArtifactRecord | None = None, short: bool = False) -> tuple[bool, str]:
    found = verdict(rec or record(), find_consumer(consumer), short_device_count=short)
    return found.ok, str(found)


def test_the_table_covers_jax_0_7_to_0_10_and_tensorflow_2_18_to_2_21_each_row_with_its_source() -> None:
    versions = {(c.runtime, c.version) for c in CONSUMERS}
    assert {("jax", f"0.{m}.0") for m in (7, 8, 9, 10)} <= versions
    assert {("tf", f"2.{m}.0") for m in (18, 19, 20, 21)} <= versions
    assert all("measured" in c.source or "documented" in c.source for c in CONSUMERS)


def test_jax_0_7_2_cannot_read_todays_artifacts_and_says_why() -> None:
    ok, text = check("jax==0.7.2")
    assert not ok
    assert "generations up to 4" in text and "device count" in text and "0 devices" in text
    assert "StableHLO 1.15.0" in text and "source:" in text


def test_jax_0_8_3_and_0_9_2_can_with_a_note_on_the_newer_stablehlo_target() -> None:
    for consumer in ("jax==0.8.3", "jax==0.9.2"):
        ok, text = check(consumer)
        assert ok, text
        assert "yes; note: the module targets StableHLO 1.15.0" in text and "measured to load" in text
    assert check("jax==0.10.2") == (True, "JAX 0.10.2: yes")


def test_a_module_for_a_newer_stablehlo_than_a_consumer_reads_is_refused() -> None:
    ok, text = check("jax==0.10.2", record(mlir_module_serialized=module("1.18.0")))
    assert not ok and "targets StableHLO 1.18.0, and it reads StableHLO up to 1.17.0" in text


def test_named_shardings_need_jax_0_9_and_an_old_device_count_field_serves_old_readers() -> None:
    mesh = AbstractMeshRecord((2,), ("x",), (AxisType.AUTO,))
    sharded = record(in_shardings=(NamedShardingRecord(mesh, PartitionSpecRecord((("x",),))),), nr_devices=2)
    ok, text = check("jax==0.8.3", sharded)
    assert not ok and "generation 6 for shardings as NamedSharding" in text
    assert check("jax==0.9.0", sharded)[0]
    old = record(mlir_module_serialized=module("1.12.0"))  # as jax.export 0.7 wrote it
    assert check("jax==0.7.2", old, short=True) == (True, "JAX 0.7.2: yes")
    assert not check("jax==0.7.2", old, short=False)[0]


def test_tensorflow_reads_calling_convention_10_from_2_20() -> None:
    ok, text = check("tf==2.19")
    assert not ok and "calling convention 10 is outside TensorFlow 2.19.0's window [4, 9]" in text
    assert check("tf==2.21") == (True, "TensorFlow 2.21.0: yes")
    assert check("tensorflow==2.20.0")[0]


def test_consumers_are_named_as_pip_names_versions_and_others_are_refused_listing_the_known() -> None:
    assert find_consumer("tf==2.21") is find_consumer("tensorflow==2.21.0")
    assert find_consumer(" JAX==0.9.2 ").version == "0.9.2"
    assert find_consumer("jax==0.8").version == "0.8.0"
    with pytest.raises(UsageError, match="knows no jax 0.6.0: its table of consumers has jax 0.7.0, 0.7.1"):
        find_consumer("jax==0.6.0")
    for bad in ("jax", "jax>=0.9", "torch==2.4", "jax=="):
        with pytest.raises(UsageError, match="RUNTIME==VERSION"):
            find_consumer(bad)


def test_the_table_has_jax_0_11_1_0_12_0_and_0_12_1_with_the_generation_each_reads() -> None:
    rows = {c.version: c for c in CONSUMERS if c.runtime == "jax"}
    assert [rows[v].serialization for v in ("0.11.0", "0.11.1", "0.11.2", "0.12.0", "0.12.0.1", "0.12.1")] == [
        11, 12, 12, 12, 12, 13]
    assert rows["0.12.1"].stablehlo == "1.25.3"
    assert "documented" in rows["0.11.1"].source and "measured" not in rows["0.11.1"].source
