"""The jaxport trailer: sealing, unsealing, and refusing changed bytes."""

from __future__ import annotations

import hashlib

import pytest

from jaxport.domain.errors import ArtifactError
from jaxport.domain.integrity import (
    FOOTER_SIZE, MAGIC, MAX_EXTENSION_BYTES, Extension, ModuleRegion, is_sealed, seal, unseal)

BODY = bytes(range(256)) * 3
EXT = Extension(constraints=(("n >= 16", "h == 2*w"), ()))


def test_a_sealed_blob_unseals_to_its_flatbuffer_and_extension() -> None:
    sealed = seal(BODY, EXT)
    assert is_sealed(sealed) and sealed.startswith(BODY)
    out = unseal(sealed)
    assert out.flatbuffer == BODY and out.extension == EXT
    assert out.digest is not None and len(out.digest) == 64


def test_an_unsealed_blob_passes_through_without_extension() -> None:
    out = unseal(BODY)
    assert (out.flatbuffer, out.extension, out.digest) == (BODY, None, None)


def test_changing_any_byte_before_the_magic_is_refused() -> None:
    sealed = seal(BODY, EXT)
    for i in range(len(sealed) - len(MAGIC)):
        damaged = bytearray(sealed)
        damaged[i] ^= 0x41
        with pytest.raises(ArtifactError):
            unseal(damaged)


def region(offset: int = 100, length: int = 300) -> ModuleRegion:
    return ModuleRegion(offset, length, hashlib.sha256(BODY[offset:offset + length]).digest())


def test_a_blob_sealed_with_its_module_region_unseals_to_its_flatbuffer_and_extension() -> None:
    sealed = seal(BODY, EXT, region())
    out = unseal(sealed)
    assert out.flatbuffer == BODY and out.extension == EXT and out.digest is not None
    assert out.digest != unseal(seal(BODY, EXT)).digest


def test_changing_any_byte_of_a_blob_sealed_with_a_module_region_is_refused() -> None:
    sealed = seal(BODY, EXT, region())
    for i in range(len(sealed) - len(MAGIC)):
        damaged = bytearray(sealed)
        damaged[i] ^= 0x41
        with pytest.raises(ArtifactError):
            unseal(damaged)


def test_a_wrong_module_digest_makes_a_blob_every_reader_refuses() -> None:
    with pytest.raises(ArtifactError, match="digest does not match"):
        unseal(seal(BODY, EXT, ModuleRegion(100, 300, bytes(32))))


def test_a_module_region_outside_the_flatbuffer_is_refused() -> None:
    with pytest.raises(ValueError, match="outside"):
        seal(BODY, EXT, ModuleRegion(len(BODY) - 10, 11, bytes(32)))


def test_the_digest_mismatch_says_the_bytes_changed() -> None:
    damaged = bytearray(seal(BODY, EXT))
    damaged[10] ^= 1
    with pytest.raises(ArtifactError, match="digest does not match"):
        unseal(damaged)


def test_an_extension_that_is_not_the_expected_json_is_refused() -> None:
    for bad in (b"[1]", b'{"constraints": [[1]]}', b"\xff", b'{"constraints": 3}',
                b'{"constraints": [' + b"[]," * 100 + b"[]]}"):
        with pytest.raises(ArtifactError, match="jaxport trailer"):
            Extension.from_bytes(bad)


def test_an_oversized_extension_is_refused_before_parsing() -> None:
    with pytest.raises(ArtifactError, match="more than the limit"):
        Extension.from_bytes(b" " * (MAX_EXTENSION_BYTES + 1))


def test_a_footer_that_claims_more_than_the_blob_is_refused() -> None:
    sealed = bytearray(seal(b"", Extension()))
    sealed[0:4] = (10_000).to_bytes(4, "little")
    assert len(sealed) >= FOOTER_SIZE
    with pytest.raises(ArtifactError, match="does not fit"):
        unseal(sealed[len(sealed) - FOOTER_SIZE:])


def test_the_extensions_read_without_json_are_those_written_without_constraints() -> None:
    for ext in (Extension(((),)), Extension(((), ()))):
        assert Extension.from_bytes(ext.to_bytes()) == ext
        assert Extension.from_bytes(ext.to_bytes() + b" ") == ext  # the JSON path agrees
