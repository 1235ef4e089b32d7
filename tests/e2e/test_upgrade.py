"""``jaxport upgrade`` end to end: artifacts that JAX 0.12.1 refuses or will refuse, renewed, read and
called there with the results recorded when they were written; what cannot be carried refused, by
field, with nothing written; ``check --consumer`` and ``inspect`` naming the window and the upgrade."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import jax
import numpy as np
import pytest

import jaxport
from jaxport.adapters.flatbuffers.codec import decode_artifact, encode_artifact
from jaxport.application.cli.main import main
from jaxport.domain.artifact.consumers import CONSUMERS
from jaxport.domain.artifact.integrity import Extension, seal, unseal
from jaxport.domain.artifact.sharding import HloShardingRecord, NamedShardingRecord
from jaxport.domain.errors import ArtifactError, ConsumerMismatchError, JaxportError
from jaxport.errors import UpgradeRefusedError
from tests.helpers.upgrade_artifacts import X, hlo_era_bytes, placed_x, sharded_export


@pytest.fixture(scope="module")
def sharded() -> tuple[jaxport.Exported, tuple[np.ndarray, ...]]:
    """The sharded export and its results on :data:`X`, recorded when it is written."""
    exp = sharded_export()
    return exp, tuple(np.asarray(r) for r in jax.jit(exp.call)(placed_x()))


def results(exp: jaxport.Exported | jax.export.Exported) -> tuple[np.ndarray, ...]:
    return tuple(np.asarray(r) for r in jax.jit(exp.call)(placed_x()))


def test_an_hlo_sharding_artifact_that_jax_refuses_is_renewed_and_called_by_both_readers(
        tmp_path: Path, sharded: tuple[jaxport.Exported, tuple[np.ndarray, ...]]) -> None:
    exp, recorded = sharded
    old, new = tmp_path / "old.bin", tmp_path / "new.jaxport"
    old.write_bytes(hlo_era_bytes(exp.record))
    with pytest.raises(ValueError, match="6-month backward-compatibility window"):
        jax.export.deserialize(bytearray(old.read_bytes()))
    report = jaxport.upgrade(old, new)
    assert (report.from_version, report.from_jax, report.to_jax) == (3, None, jax.__version__)
    assert report.notes == ("HLO sharding protos mapped onto named shardings over abstract meshes",)
    renewed = decode_artifact(new.read_bytes())
    assert all(isinstance(s, NamedShardingRecord) for s in renewed.in_shardings + renewed.out_shardings)
    for reader in (jaxport.load(new), jax.export.deserialize(bytearray(new.read_bytes()))):
        for got, want in zip(results(reader), recorded, strict=True):
            np.testing.assert_array_equal(got, want)


def test_every_consumer_format_that_jaxport_writes_is_renewed_and_calls_as_recorded(tmp_path: Path) -> None:
    exp = jaxport.export(jax.jit(lambda a, b: (a * b).sum(axis=-1) + 1.0))(
        jax.ShapeDtypeStruct((3, 4), np.float32), jax.ShapeDtypeStruct((4,), np.float32))
    a, b = X[:3, :4], X[0, :4]
    recorded = np.asarray(exp.call(a, b))
    renewed = 0
    for consumer in (c for c in CONSUMERS if c.runtime == "jax"):
        old, new = tmp_path / f"{consumer.version}.jaxport", tmp_path / f"{consumer.version}-new.jaxport"
        try:
            jaxport.save(exp, old, vjp_order=1, consumer=f"jax=={consumer.version}")
        except ConsumerMismatchError:  # refused at save: nothing to renew
            continue
        report = jaxport.upgrade(old, new)
        assert report.to_jax == jax.__version__, consumer
        loaded = jaxport.load(new)
        np.testing.assert_array_equal(loaded.call(a, b), recorded, err_msg=str(consumer))
        grad = jax.grad(lambda x: loaded.call(x, b).sum())(a)
        np.testing.assert_allclose(grad, np.broadcast_to(b, a.shape), err_msg=str(consumer))
        renewed += 1
    assert renewed >= 8  # JAX 0.8.2 and later read a jaxport artifact (the table: 0.7.x-0.8.1 see 0 devices)


def test_upgrade_writes_for_a_named_consumer_and_keeps_protos_for_one_that_reads_no_named_shardings(
        tmp_path: Path, sharded: tuple[jaxport.Exported, tuple[np.ndarray, ...]]) -> None:
    exp, _ = sharded
    old = tmp_path / "old.bin"
    old.write_bytes(hlo_era_bytes(exp.record))
    report = jaxport.upgrade(old, tmp_path / "for-0.9.2", consumer="jax==0.9.2")
    assert report.consumer == "JAX 0.9.2" and report.to_jax is None
    assert jaxport.check_consumer(tmp_path / "for-0.9.2", "jax==0.9.2").ok
    jaxport.upgrade(old, tmp_path / "for-0.8.3", consumer="jax==0.8.3")
    kept = decode_artifact((tmp_path / "for-0.8.3").read_bytes())
    assert isinstance(kept.in_shardings[0], HloShardingRecord) and jaxport.check_consumer(
        tmp_path / "for-0.8.3", "jax==0.8.3").ok


def test_check_consumer_and_inspect_name_the_window_and_the_upgrade(
        tmp_path: Path, sharded: tuple[jaxport.Exported, tuple[np.ndarray, ...]],
        capsys: pytest.CaptureFixture[str]) -> None:
    exp, _ = sharded
    old, new = tmp_path / "old.bin", tmp_path / "new.jaxport"
    old.write_bytes(hlo_era_bytes(exp.record))
    said = jaxport.check_consumer(old, "jax==0.12.0.1")
    assert not said.ok and any("HLO sharding protos" in r and "jaxport upgrade" in r for r in said.reasons)
    assert not any("HLO sharding" in r for r in jaxport.check_consumer(old, "jax==0.10.2").reasons)  # it reads them
    assert main(["upgrade", str(old), str(new)]) == 0
    assert "upgraded from format 3" in capsys.readouterr().out
    assert main(["check", "--consumer", "jax==0.12.0.1", str(new)]) == 0
    assert main(["inspect", str(old)]) == 0
    out = capsys.readouterr().out
    assert "window: JAX promises to read it up to 2025-04-16" in out and "`jaxport upgrade` renews it" in out


def damaged(blob: bytes) -> dict[str, bytes]:
    """Hostile forms of a sealed artifact: cut, a changed byte, a changed module re-sealed, wrong versions."""
    record = decode_artifact(blob)
    flat = bytes(unseal(blob).flatbuffer)
    module_at = flat.index(record.mlir_module_serialized)
    garbage = bytearray(flat)
    garbage[module_at + 40:module_at + 60] = b"\xff" * 20
    ext = Extension((record.constraints,))

    def sealed(rec: object) -> bytes:
        return bytes(seal(encode_artifact(rec), ext))  # type: ignore[arg-type]

    return {
        "truncated": blob[:len(blob) // 2], "changed": blob[:100] + bytes([blob[100] ^ 1]) + blob[101:],
        "resealed module": bytes(seal(bytes(garbage), ext)),
        "version 99": sealed(dataclasses.replace(record, serialization_version=99, jax_version="9.9")),
        "calling convention 11": sealed(dataclasses.replace(record, calling_convention_version=11)),
        "maximal sharding": sealed(dataclasses.replace(record, in_shardings=(HloShardingRecord(
            b"\x08\x01\x1a\x01\x01\x22\x01\x01"),), out_shardings=(None,) * len(record.out_avals))),
    }


@pytest.mark.parametrize(("case", "error", "match"), [
    ("truncated", ArtifactError, "offset|trailer|truncat|past the end"),
    ("changed", ArtifactError, "digest does not match"),
    ("resealed module", ArtifactError, "does not parse"),
    ("version 99", UpgradeRefusedError, "serialization_version: JAX never wrote format version 99"),
    ("calling convention 11", UpgradeRefusedError, "calling_convention_version: calling convention 11"),
    ("maximal sharding", UpgradeRefusedError, r"in_shardings\[0\]: .*maximal sharding"),
])
def test_hostile_inputs_are_refused_by_type_and_nothing_is_written(
        tmp_path: Path, case: str, error: type[JaxportError], match: str) -> None:
    exp = jaxport.export(jax.jit(lambda a: a * 2.0))(jax.ShapeDtypeStruct((3,), np.float32))
    old, new = tmp_path / "old.bin", tmp_path / "new.jaxport"
    old.write_bytes(damaged(bytes(exp.serialize()))[case])
    new.write_bytes(b"what was there")
    with pytest.raises(error, match=match):
        jaxport.upgrade(old, new)
    assert new.read_bytes() == b"what was there" and sorted(os.listdir(tmp_path)) == ["new.jaxport", "old.bin"]
    assert main(["upgrade", str(old), str(tmp_path / "other")]) == 2 and not (tmp_path / "other").exists()
