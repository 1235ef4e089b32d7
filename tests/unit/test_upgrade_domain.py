"""What ``jaxport upgrade`` decides, without JAX: HLO sharding protos read and mapped onto named
shardings, the records renewed or refused by field, and JAX's six-month window."""

from __future__ import annotations

import dataclasses
import datetime

import pytest

from jaxport.domain.artifact.consumers import find_consumer
from jaxport.domain.artifact.op_sharding import (
    ModuleMesh, OpSharding, ShardingType, UnrepresentableSharding, as_named_sharding, meshes_from_json, module_mesh,
    read_op_sharding
)
from jaxport.domain.artifact.producer import Producer
from jaxport.domain.artifact.renewal import UpgradeRefusedError, gspmd_annotated, renewed
from jaxport.domain.artifact.sharding import AbstractMeshRecord, AxisType, HloShardingRecord, NamedShardingRecord
from jaxport.domain.errors import ArtifactError
from jaxport.domain.artifact.window import (
    FORMAT_DATES, artifact_date, six_months_after, window_line, window_notes, window_reasons
)
from tests.helpers.consumer_records import module, record

# What jax 0.8.3 wrote for P("x", None) over a mesh {x: 2} (its artifact's in_shardings[0]).
TILED_ROWS = bytes.fromhex("08031a0202014a0102520100")


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        out.append(value & 0x7F | (0x80 if value > 0x7F else 0))
        value >>= 7
        if not value:
            return bytes(out)


def proto(kind: int, *, tiles: tuple[int, ...] = (), devices: tuple[int, ...] = (), reshape: tuple[int, ...] = (),
          perm: tuple[int, ...] = (), replicate_last: bool = False, subgroups: tuple[int, ...] = ()) -> bytes:
    """An ``xla.OpSharding`` as protobuf writes it (packed repeated fields)."""
    out = bytearray(b"\x08" + varint(kind))
    for field, values in ((3, tiles), (4, devices), (8, subgroups), (9, reshape), (10, perm)):
        if values:
            packed = b"".join(varint(v) for v in values)
            out += varint(field << 3 | 2) + varint(len(packed)) + packed
    if replicate_last:
        out += b"\x30\x01"
    return bytes(out)


def test_jax_0_8_3s_sharding_of_rows_reads_as_a_named_sharding_over_one_axis() -> None:
    read = read_op_sharding(TILED_ROWS)
    assert read == OpSharding(ShardingType.OTHER, tile_dims=(2, 1), iota_reshape_dims=(2,), iota_transpose_perm=(0,))
    named = as_named_sharding(read, ndim=2)
    assert (named.mesh.axis_sizes, named.mesh.axis_names, named.spec.partitions) == ((2,), ("_axis_0",),
                                                                                     (("_axis_0",), ()))


def test_a_transposed_iota_splits_its_axes_as_the_tiles_need() -> None:
    # {devices=[4,2]<=[2,4]T(1,0)}: P("y", "x") over {x: 2, y: 4}.
    named = as_named_sharding(read_op_sharding(proto(3, tiles=(4, 2), reshape=(2, 4), perm=(1, 0))), ndim=2)
    assert named.mesh.axis_sizes == (2, 4) and named.spec.partitions == (("_axis_1",), ("_axis_0",))
    # {devices=[2,2]<=[4]}: one reshape dimension split in two.
    named = as_named_sharding(read_op_sharding(proto(3, tiles=(2, 2), reshape=(4,))), ndim=2)
    assert named.mesh.axis_sizes == (2, 2) and named.spec.partitions == (("_axis_0",), ("_axis_1",))


def test_replication_over_the_last_tile_dimension_leaves_those_axes_out_of_the_spec() -> None:
    named = as_named_sharding(read_op_sharding(proto(3, tiles=(1, 2, 4), reshape=(8,), replicate_last=True)), 2)
    assert named.mesh.axis_sizes == (2, 4) and named.spec.partitions == ((), ("_axis_0",))
    named = as_named_sharding(read_op_sharding(proto(3, tiles=(2, 4), reshape=(8,), subgroups=(0,))), 1)
    assert named.spec.partitions == (("_axis_0",),)


def test_replicated_is_the_empty_mesh_and_explicit_iota_devices_read_as_an_iota() -> None:
    named = as_named_sharding(read_op_sharding(proto(0)), ndim=3)
    assert named.mesh.axis_sizes == () and named.spec.partitions == ((), (), ())
    named = as_named_sharding(read_op_sharding(proto(3, tiles=(2, 1), devices=(0, 1))), ndim=2)
    assert named.spec.partitions == (("_axis_0",), ())


XY = AbstractMeshRecord((2, 4), ("x", "y"), (AxisType.AUTO,) * 2)


def test_over_the_modules_mesh_each_tiling_axis_takes_the_names_of_the_mesh_axes_it_spans() -> None:
    assert as_named_sharding(read_op_sharding(TILED_ROWS), 2, AbstractMeshRecord((2,), ("x",), (AxisType.AUTO,))
                             ).spec.partitions == (("x",), ())
    named = as_named_sharding(read_op_sharding(proto(3, tiles=(4, 2), reshape=(2, 4), perm=(1, 0))), 2, XY)
    assert named.mesh == XY and named.spec.partitions == (("y",), ("x",))
    named = as_named_sharding(read_op_sharding(proto(3, tiles=(8, 1), reshape=(8,))), 2, XY)
    assert named.spec.partitions == (("x", "y"), ())
    assert as_named_sharding(read_op_sharding(proto(0)), 1, XY) == NamedShardingRecord(
        XY, named.spec.__class__(((),)))
    # A tiling that splits a mesh axis (4 rows over x=2 and half of y=4) keeps JAX's own names.
    named = as_named_sharding(read_op_sharding(proto(3, tiles=(4, 2), reshape=(8,))), 2, XY)
    assert named.mesh.axis_names == ("_axis_0", "_axis_1") and named.mesh != XY
    named = as_named_sharding(read_op_sharding(proto(3, tiles=(2, 1), reshape=(2,))), 2, XY)
    assert named.mesh.axis_names == ("_axis_0",)  # 2 devices, and the mesh has 8


def test_the_modules_mesh_is_its_one_iota_mesh_with_axes_and_the_report_is_bounds_checked() -> None:
    report = [{"name": "mesh", "axes": [["x", 2], ["y", 4]], "device_ids": []},
              {"name": "empty_mesh", "axes": [], "device_ids": []}]
    assert module_mesh(meshes_from_json(report)) == XY
    assert module_mesh((ModuleMesh("m", (("x", 2),), (1, 0)),)) is None  # a device order of its own
    assert module_mesh((ModuleMesh("a", (("x", 2),)), ModuleMesh("b", (("y", 2),)))) is None
    assert meshes_from_json(None) == ()
    with pytest.raises(ArtifactError, match="meshes is malformed"):
        meshes_from_json([{"name": "mesh", "axes": [["x"]], "device_ids": []}])


@pytest.mark.parametrize(("blob", "ndim", "why"), [
    (proto(1, tiles=(1,), devices=(3,)), 1, "maximal sharding has no form"),
    (proto(4), 1, "manual sharding"),
    (proto(2) + b"\x2a\x02\x08\x00", 1, "tuple sharding"),
    (proto(3, tiles=(2, 1), devices=(1, 0)), 2, "no mesh gives"),
    (proto(3, tiles=(2, 2), reshape=(4,), subgroups=(4,)), 1, "subgroups"),
    (proto(3, tiles=(2, 3), reshape=(3, 2)), 2, "straddles"),
    (proto(3, tiles=(2, 1), reshape=(2,)), 3, "rank 3"),
    (proto(3, tiles=(2, 1), reshape=(3,)), 2, "does not give 2 devices"),
    (TILED_ROWS[:-2], 2, "truncated"),
    (b"\x0f", 1, "wire type"),
])
def test_what_no_named_sharding_expresses_is_refused_with_why(blob: bytes, ndim: int, why: str) -> None:
    with pytest.raises(UnrepresentableSharding, match=why):
        as_named_sharding(read_op_sharding(blob), ndim)


def test_renewing_maps_hlo_shardings_and_stamps_the_newest_format_on_every_table() -> None:
    rec = dataclasses.replace(record(in_shardings=(HloShardingRecord(proto(3, tiles=(2,), reshape=(2,))),),
                                     out_shardings=(HloShardingRecord(proto(0)),), nr_devices=2),
                              vjp=record())
    renewal = renewed(rec, version=12, jax_version="0.12.1")
    out = renewal.record
    assert all(isinstance(s, NamedShardingRecord) for s in out.in_shardings + out.out_shardings)
    assert [(t.serialization_version, t.jax_version) for t in out.chain] == [(12, "0.12.1")] * 2
    assert out.signature == rec.signature and out.mlir_module_serialized == rec.mlir_module_serialized
    assert renewal.notes == ("HLO sharding protos mapped onto named shardings over abstract meshes",)
    kept = renewed(rec, version=3, jax_version=None, map_hlo_shardings=False).record
    assert kept.in_shardings == rec.in_shardings and kept.jax_version is None


def test_an_unrepresentable_sharding_is_refused_by_its_field_even_in_a_vjp() -> None:
    bad = record(in_shardings=(HloShardingRecord(proto(1, tiles=(1,), devices=(0,))),),
                 out_shardings=(None,), nr_devices=2)
    with pytest.raises(UpgradeRefusedError, match=r"'f': in_shardings\[0\]: .*maximal"):
        renewed(bad, version=12, jax_version="0.12.1")
    with pytest.raises(UpgradeRefusedError, match=r"vjp \(order 1\): in_shardings\[0\]") as raised:
        renewed(dataclasses.replace(record(), vjp=bad), version=12, jax_version="0.12.1")
    assert raised.value.field == "vjp (order 1): in_shardings[0]"


@pytest.mark.parametrize(("changes", "field"), [
    ({"serialization_version": 99}, "serialization_version"),
    ({"serialization_version": 7}, "serialization_version"),
    ({"serialization_version": 0}, "serialization_version"),
    ({"calling_convention_version": 11}, "calling_convention_version"),
    ({"calling_convention_version": 8}, "calling_convention_version"),
])
def test_version_numbers_no_jax_wrote_or_calls_are_refused(changes: dict[str, int], field: str) -> None:
    with pytest.raises(UpgradeRefusedError) as raised:
        renewed(record(**changes), version=12, jax_version="0.12.1")
    assert raised.value.field == field


def test_a_modules_gspmd_annotations_are_kept_and_said() -> None:
    gspmd = module("1.13.0") + b'mhlo.sharding\x00{devices=[2,1]<=[2]}'
    assert gspmd_annotated(gspmd) and not gspmd_annotated(module("1.13.0"))
    renewal = renewed(record(mlir_module_serialized=gspmd), version=12, jax_version="0.12.1")
    assert renewal.record.mlir_module_serialized == gspmd
    assert "GSPMD sharding annotations (mhlo.sharding) are kept" in renewal.notes[0]


def test_six_months_after_keeps_the_day_or_takes_the_months_last() -> None:
    assert six_months_after(datetime.date(2026, 4, 4)) == datetime.date(2026, 10, 4)
    assert six_months_after(datetime.date(2026, 8, 31)) == datetime.date(2027, 2, 28)
    assert six_months_after(datetime.date(2025, 12, 31)) == datetime.date(2026, 6, 30)


def test_an_artifacts_date_is_its_format_versions_or_its_writers_release_whichever_is_later() -> None:
    assert artifact_date(record()) == (FORMAT_DATES[3], "serialization version 3")
    sealed = record(producer=Producer(jaxport="0.1.0", jax="0.10.2", jaxlib="0.10.2", stablehlo="1.15.0"))
    assert artifact_date(sealed) == (datetime.date(2026, 6, 17), "written by JAX 0.10.2")
    assert artifact_date(record(serialization_version=12, jax_version="0.11.2")) == (
        FORMAT_DATES[12], "serialization version 12")
    line = window_line(sealed)
    assert line is not None and "up to 2026-12-17" in line and "`jaxport upgrade` renews it" in line


def test_jax_0_11_1_and_later_refuse_hlo_shardings_and_a_short_device_count_and_upgrade_is_named() -> None:
    hlo = record(in_shardings=(HloShardingRecord(TILED_ROWS),), nr_devices=2)
    assert window_reasons(hlo, find_consumer("jax==0.10.2"), only_short_device_count=True) == ()
    reasons = window_reasons(hlo, find_consumer("jax==0.12.0.1"), only_short_device_count=True)
    assert len(reasons) == 2 and "HLO sharding protos" in reasons[0] and "nr_devices_short" in reasons[1]
    assert all("`jaxport upgrade` renews it" in r for r in reasons)
    assert window_reasons(hlo, find_consumer("tf==2.21"), only_short_device_count=True) == ()


def test_a_release_built_more_than_six_months_after_the_artifact_gets_a_note() -> None:
    sealed = record(producer=Producer(jaxport="0.1.0", jax="0.8.1", jaxlib="0.8.1", stablehlo="1.13.3"))
    notes = window_notes(sealed, (find_consumer("jax==0.10.2"), find_consumer("jax==0.8.3")))
    assert len(notes) == 1 and "outside JAX 0.10.2's window (released 2026-06-17" in notes[0]
    # A release whose date is not known is not older than the newest format version its reader knows.
    later = window_notes(sealed, (find_consumer("jax==0.12.0.1"),))
    assert len(later) == 1 and "released after 2026-07-29" in later[0]
