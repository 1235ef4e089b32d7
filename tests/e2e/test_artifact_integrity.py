"""End to end: the digest and the recorded constraints of jaxport-written artifacts."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import struct
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport
from jaxport.adapters.flatbuffers import wire as W
from jaxport.adapters.flatbuffers.codec import encode_artifact
from jaxport.domain.artifact.integrity import FOOTER_SIZE, Extension, is_sealed, seal, unseal
from jaxport.errors import ArtifactError
from tests.helpers.artifacts import field_target, patched


@functools.cache
def constrained() -> jaxport.Exported:
    n, = jaxport.symbolic_shape("n", constraints=("n >= 16",))
    return jaxport.export(jax.jit(lambda x: jnp.sin(x) * 2))(jax.ShapeDtypeStruct((n, 3), jnp.float32))


def test_serialize_seals_by_default_and_integrity_false_gives_the_bare_flatbuffer() -> None:
    sealed, bare = constrained().serialize(), constrained().serialize(integrity=False)
    assert is_sealed(sealed) and not is_sealed(bare)
    assert sealed.startswith(bare) and len(sealed) > len(bare) + FOOTER_SIZE


def test_serialize_writes_trailer_version_1_whose_digest_covers_every_byte_before_it() -> None:
    blob = constrained().serialize(vjp_order=1)
    assert blob[-FOOTER_SIZE + 4:-FOOTER_SIZE + 6] == b"\x01\x00"
    assert unseal(blob).digest == hashlib.sha256(blob[:-FOOTER_SIZE + 8]).hexdigest()


def test_jax_export_reads_a_sealed_artifact_and_calls_it() -> None:
    theirs = jax.export.deserialize(constrained().serialize(vjp_order=1))
    x = np.ones((16, 3), np.float32)
    np.testing.assert_allclose(theirs.call(x), np.sin(x) * 2, rtol=1e-6)


def test_a_sealed_artifact_with_a_bad_vjp_table_loads_and_its_vjp_is_refused_with_an_artifact_error() -> None:
    # A valid digest over a VJP table that is bad all the same (written so, then sealed):
    # deserialize reads that table on the first vjp(), which raises the ArtifactError.
    exp = constrained()
    record = exp._record_with_vjps(1)
    assert record.vjp is not None
    bad = dataclasses.replace(record, vjp=dataclasses.replace(record.vjp, calling_convention_version=1))
    flat = bytes(encode_artifact(bad))
    sealed = seal(flat, Extension((("n >= 16",), ("n >= 16",))))
    loaded = jaxport.deserialize(sealed)
    assert loaded.has_vjp()
    x = np.ones((16, 3), np.float32)
    np.testing.assert_allclose(loaded.call(x), np.sin(x) * 2, rtol=1e-6)
    with pytest.raises(ArtifactError, match="calling convention"):
        loaded.vjp()
    with pytest.raises(ArtifactError, match="calling convention"):
        jax.grad(lambda v: loaded.call(v).sum())(x)


def test_changing_any_byte_of_a_sealed_artifact_is_refused_at_load() -> None:
    blob = bytes(constrained().serialize())
    for i in range(len(blob)):
        damaged = bytearray(blob)
        damaged[i] ^= 0xA5
        with pytest.raises(ArtifactError):
            jaxport.deserialize(damaged)


def test_truncating_or_appending_to_a_sealed_artifact_is_refused() -> None:
    blob = bytes(constrained().serialize())
    bare_len = len(constrained().serialize(integrity=False))
    for cut in range(1, len(blob) - bare_len):  # cutting the whole trailer leaves jax.export's bytes
        with pytest.raises(ArtifactError):
            jaxport.deserialize(blob[:-cut])
    with pytest.raises(ArtifactError):
        jaxport.deserialize(blob + b"\x00" * 9)


def test_a_sealed_artifact_with_its_magic_changed_is_refused_whatever_byte_changed_too() -> None:
    # The fuzz campaign's mutation that loaded: a byte of the magic and a vtable's
    # length (12 -> 106), so that the table seemed written by a newer schema,
    # whose data no read reaches, and the rest of the trailer passed for such data.
    # Without its magic the whole blob is read as a flatbuffer, whose size must be a
    # multiple of 4: the constraint's digits pad the trailer so that it is, and the
    # refusal comes from the check of what is left of the trailer.
    for digits in range(1, 5):
        n, = jaxport.symbolic_shape("n", constraints=("n >= " + "1" * digits,))
        blob = bytes(jaxport.export(jax.jit(jnp.sin), platforms=("cpu", "cuda"))(
            jax.ShapeDtypeStruct((n, 3), jnp.float32)).serialize())
        if len(blob) % 4 == 0:
            break
    assert len(blob) % 4 == 0
    flat = bytes(unseal(blob).flatbuffer)
    avals = field_target(flat, W.Root.UNIQUE_AVALS)
    aval = avals + 4 + struct.unpack_from("<I", flat, avals + 4)[0]
    vtable = aval - struct.unpack_from("<i", flat, aval)[0]
    assert struct.unpack_from("<H", flat, vtable)[0] == 12
    no_magic = patched(blob, len(blob) - 8, "<B", blob[-8] ^ 0x10)
    with pytest.raises(ArtifactError, match="jaxport trailer that is not intact"):
        jaxport.deserialize(patched(no_magic, vtable, "<H", 106))
    for i in range(len(flat)):
        with pytest.raises(ArtifactError):
            jaxport.deserialize(patched(no_magic, i, "<B", 106 if blob[i] != 106 else 12))


def test_a_constraint_survives_the_round_trip_and_refuses_a_violating_call_with_its_message(
        tmp_path: Path) -> None:
    path = tmp_path / "f.jaxport"
    jaxport.save(constrained(), path, vjp_order=1)
    loaded = jaxport.load(path)
    for again in (loaded, jaxport.deserialize(constrained().serialize())):
        with pytest.raises(ValueError, match="symbolic shape constraint n >= 16"):
            again.call(np.ones((8, 3), np.float32))
        np.testing.assert_allclose(again.call(np.ones((16, 3), np.float32)),
                                   np.sin(np.ones((16, 3))) * 2, rtol=1e-6)
    with pytest.raises(ValueError, match="symbolic shape constraint n >= 16"):
        jax.grad(lambda x: loaded.call(x).sum())(np.ones((8, 3), np.float32))


def test_without_the_trailer_the_constraint_is_lost_as_in_jax_export() -> None:
    again = jaxport.deserialize(constrained().serialize(integrity=False))
    n = again.in_avals[0].shape[0]
    assert not n.scope.constraints


def test_a_sharding_over_an_axis_the_mesh_lacks_is_an_artifact_error() -> None:
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    from jaxport.adapters.flatbuffers.codec import decode_artifact, encode_artifact
    from jaxport.domain.artifact.sharding import NamedShardingRecord, PartitionSpecRecord

    mesh = Mesh(np.array(jax.devices()[:8]), ("d",))
    f = jax.jit(jnp.sin, in_shardings=NamedSharding(mesh, P("d")))
    record = decode_artifact(jaxport.export(f)(jax.ShapeDtypeStruct((8, 3), jnp.float32)).serialize())
    sharding = record.in_shardings[0]
    assert isinstance(sharding, NamedShardingRecord)
    bad = dataclasses.replace(sharding, spec=PartitionSpecRecord((("nope",), ())))
    with pytest.raises(ArtifactError, match="sharding or abstract value that JAX refuses"):
        jaxport.deserialize(encode_artifact(dataclasses.replace(record, in_shardings=(bad,))))
