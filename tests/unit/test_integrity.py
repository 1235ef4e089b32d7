"""The jaxport trailer: sealing, unsealing, and refusing changed bytes."""

from __future__ import annotations

import hashlib
import json

import pytest

from jaxport.domain.errors import ArtifactError
from jaxport.domain.artifact.integrity import (
    FOOTER_SIZE, MAGIC, MAX_EXTENSION_BYTES, Extension, is_sealed, seal, trailer_remains, unseal
)

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


#: The trailer that jaxport 0.1 appended to ``BODY`` with ``EXT`` as version 2, the
#: module's region being bytes 100 to 400 (frozen: written by that version's seal()).
TRAILER_V2 = bytes.fromhex(
    "7b22636f6e73747261696e7473223a5b5b226e203e3d203136222c2268203d3d20322a77225d2c5b5d5d7d"
    "64000000000000002c010000000000002b00000002000000"
    "428667eb78941d8256641bab4c19239c0bd15c472eb1e4a47140b04b3ea8a663"
    "4a58505254007f01")


def test_seal_writes_one_trailer_version_whose_digest_covers_every_byte_before_it() -> None:
    sealed = seal(BODY, EXT)
    ext = EXT.to_bytes()
    assert sealed[len(BODY):len(BODY) + len(ext)] == ext
    footer = sealed[len(BODY) + len(ext):]
    assert len(footer) == FOOTER_SIZE and footer[4:8] == b"\x01\x00\x00\x00"
    assert unseal(sealed).digest == hashlib.sha256(sealed[:-FOOTER_SIZE + 8]).hexdigest()


def test_a_version_2_trailer_of_jaxport_0_1_still_unseals() -> None:
    out = unseal(BODY + TRAILER_V2)
    assert out.flatbuffer == BODY and out.extension == EXT
    assert out.digest == "428667eb78941d8256641bab4c19239c0bd15c472eb1e4a47140b04b3ea8a663"


def test_changing_any_byte_of_a_version_2_artifact_is_refused() -> None:
    sealed = BODY + TRAILER_V2
    for i in range(len(sealed) - len(MAGIC)):
        damaged = bytearray(sealed)
        damaged[i] ^= 0x41
        with pytest.raises(ArtifactError):
            unseal(damaged)


def test_an_extension_with_keys_this_jaxport_does_not_know_reads_its_constraints() -> None:
    data = json.dumps({"producer": {"jaxport": "9.9"}, "constraints": [["n >= 16"]]}).encode()
    assert Extension.from_bytes(data) == Extension((("n >= 16",),))


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


def test_what_is_left_of_a_trailer_whose_footer_was_damaged_is_found() -> None:
    for sealed in (bytes(seal(BODY, EXT)), BODY + TRAILER_V2):
        for i in range(len(sealed) - len(MAGIC), len(sealed)):
            damaged = bytearray(sealed)
            damaged[i] ^= 0x41
            assert not is_sealed(damaged)
            # after the flatbuffer, and where reads reached over the whole trailer
            assert trailer_remains(damaged, len(BODY)) and trailer_remains(damaged, len(sealed))
        for cut in range(1, len(sealed) - len(BODY) - 15):  # the extension's opening is left
            assert trailer_remains(sealed[:-cut], len(BODY))
        assert trailer_remains(sealed + bytes(4), len(BODY))


def test_bytes_without_a_trailer_hold_none() -> None:
    # what a newer jax.export might write where no read reaches: strings and vectors
    tails = (b"", bytes(4), b"\x03\x00\x00\x00abc\x00", b'\x10\x00\x00\x00{"constraints": []}',
             (1).to_bytes(4, "little") * 16, bytes(range(256)))
    for tail in tails:
        assert not trailer_remains(BODY + tail, len(BODY))
        assert not trailer_remains(BODY + tail, len(BODY) + len(tail))
