"""The jaxport trailer: a digest and an extension after the flatbuffer.

An artifact that jaxport writes is ``jax.export``'s flatbuffer followed by a
trailer::

    flatbuffer | extension (JSON, UTF-8) | footer (48 bytes)

    footer = extension length   u32, little endian
             trailer version    u16 (1)
             reserved           u16 (0)
             SHA-256            32 bytes, of ``flatbuffer | extension | the 8 bytes above``
             magic              8 bytes, b"JXPRT\\x00\\x7f\\x01"

The extension is a JSON object; readers skip the keys they do not know, so a
new field of the trailer is a new key, not a new trailer version.

jaxport 0.1 also wrote version 2, which readers still accept: a region
(module offset and length, two u64) between the extension and the footer,
and a digest taken with the module's bytes replaced by their own SHA-256::

    SHA-256(flatbuffer[:offset] | flatbuffer[offset + length:] | extension
            | region | the 8 bytes above | SHA-256(flatbuffer[offset:offset + length]))

Flatbuffer readers start from the root offset at byte 0 and follow offsets;
nothing points past the flatbuffer, so ``jax.export.deserialize`` (jax
0.10.2) reads a sealed artifact as if the trailer were not there. A reader
that knows the trailer checks the digest *before* any parser sees the bytes,
so that every changed byte is refused; a change to the magic leaves no
sealed artifact, and what is left of the trailer after the flatbuffer
(:func:`trailer_remains`) is refused instead. The extension records what
``jax.export``'s schema cannot hold: the symbolic constraints of each table
of the VJP chain, and the versions that wrote the artifact (``producer``,
:mod:`.producer`).

Why a trailer and not a new vtable slot: a slot past jax.export's last one
would be taken by the next field jax.export adds, and its reader would then
misread jaxport's bytes. The trailer's risk is different: if a future
``jax.export`` refused bytes after the buffer (a size-prefixed or verified
buffer), sealed artifacts would need ``serialize(integrity=False)`` to be
read there. The digest detects damage; it is not a signature: anyone can
write a sealed artifact, so it says nothing about who wrote it.

>>> sealed = seal(b"FLATBUFFER", Extension(constraints=(("n >= 16",),)))
>>> unsealed = unseal(sealed)
>>> bytes(unsealed.flatbuffer), unsealed.extension
(b'FLATBUFFER', Extension(constraints=(('n >= 16',),), producer=None))
>>> unseal(b"FLATBUFFER").extension is None
True
"""

from __future__ import annotations

import hashlib
import json
import struct
from dataclasses import dataclass
from typing import Final

from jaxport.domain.errors import ArtifactError
from .producer import Producer

MAGIC: Final = b"JXPRT\x00\x7f\x01"
#: The version written.
TRAILER_VERSION: Final = 1
#: The version jaxport 0.1 also wrote (read, never written).
_REGION_VERSION: Final = 2
_HEAD: Final = struct.Struct("<IHH")
_REGION: Final = struct.Struct("<QQ")
DIGEST_SIZE: Final = 32
FOOTER_SIZE: Final = _HEAD.size + DIGEST_SIZE + len(MAGIC)
#: How every extension that jaxport writes begins (jaxport 0.1's too).
_EXTENSION_OPENING: Final = b'{"constraints":['

#: Bounds on what an extension may hold (checked before use).
MAX_EXTENSION_BYTES: Final = 1 << 20
MAX_LEVELS: Final = 64
MAX_CONSTRAINTS: Final = 1024
MAX_CONSTRAINT_CHARS: Final = 4096


@dataclass(frozen=True, slots=True)
class Extension:
    """What the trailer records besides the digest.

    Attributes:
        constraints: the symbolic constraints of the primal table (index 0)
            and of each nested VJP table (index k for order k).
        producer: the versions that wrote the artifact (absent from
            artifacts that jaxport wrote before it recorded them).
    """

    constraints: tuple[tuple[str, ...], ...] = ()
    producer: Producer | None = None

    def to_bytes(self) -> bytes:
        """The extension as compact JSON."""
        doc: dict[str, object] = {"constraints": [list(c) for c in self.constraints]}
        if self.producer is not None:
            doc["producer"] = self.producer.to_json()
        return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode("utf-8")

    @staticmethod
    def from_bytes(data: bytes) -> Extension:
        """Parses and bounds-checks an extension (keys other than ``constraints`` and ``producer`` are skipped).

        Raises:
            ArtifactError: the bytes are not an extension jaxport writes.
        """
        if len(data) > MAX_EXTENSION_BYTES:
            raise ArtifactError(f"jaxport trailer: the extension has {len(data)} bytes, "
                                f"more than the limit of {MAX_EXTENSION_BYTES}")
        try:
            value = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise ArtifactError(f"jaxport trailer: the extension is not JSON ({exc})") from None
        levels = value.get("constraints") if isinstance(value, dict) else None
        if not isinstance(levels, list) or len(levels) > MAX_LEVELS:
            raise ArtifactError("jaxport trailer: 'constraints' must be a list of at most "
                                f"{MAX_LEVELS} lists of strings")
        for i, level in enumerate(levels):
            if (not isinstance(level, list) or len(level) > MAX_CONSTRAINTS
                    or not all(isinstance(c, str) and len(c) <= MAX_CONSTRAINT_CHARS
                               for c in level)):
                raise ArtifactError(
                    f"jaxport trailer: constraints[{i}] must be a list of at most "
                    f"{MAX_CONSTRAINTS} strings of at most {MAX_CONSTRAINT_CHARS} characters")
        return Extension(tuple(tuple(level) for level in levels), Producer.from_json(value.get("producer")))


@dataclass(frozen=True, slots=True)
class Unsealed:
    """An artifact split into its flatbuffer and (when sealed) its extension.

    Attributes:
        flatbuffer: the bytes ``jax.export`` reads.
        extension: the checked extension, None when the artifact has no trailer.
        digest: the hex SHA-256 of the trailer, None when it has none.
    """

    flatbuffer: bytes | memoryview
    extension: Extension | None
    digest: str | None


def seal(flatbuffer: bytes | bytearray | memoryview, extension: Extension) -> bytearray:
    """``flatbuffer`` followed by ``extension`` and the footer with their digest.

    A ``bytearray`` is extended in place (and returned), saving a copy of
    the artifact; ``bytes`` are copied.
    """
    ext = extension.to_bytes()
    out = flatbuffer if isinstance(flatbuffer, bytearray) else bytearray(flatbuffer)
    out += ext
    out += _HEAD.pack(len(ext), TRAILER_VERSION, 0)
    out += hashlib.sha256(out).digest()
    out += MAGIC
    return out


def is_sealed(blob: bytes | bytearray | memoryview) -> bool:
    """Whether ``blob`` ends with a jaxport footer (its digest is not checked here)."""
    return len(blob) >= FOOTER_SIZE and bytes(blob[-len(MAGIC):]) == MAGIC


def trailer_remains(blob: bytes | bytearray | memoryview, end: int) -> bool:
    """Whether ``blob``, which does not end with the magic, holds what is left of a trailer.

    Such a blob is not sealed, so no digest vouches for it; when jaxport
    sealed it and a change or a cut then hit the footer, the rest of the
    trailer is still there. It is when the bytes after ``end`` (where the
    flatbuffer's last object ends) contain the magic or the opening of an
    extension as jaxport writes it (both trailer versions), or when the blob
    ends with a footer but for the magic: a footer's head (a trailer version
    this jaxport reads, reserved 0) after an extension that opens so. What
    ``jax.export`` writes, a newer version's fields included, is flatbuffer
    objects, which hold none of these but by a coincidence of many bytes.

    >>> sealed = seal(b"FLATBUFFER", Extension())
    >>> trailer_remains(sealed[:-1] + b"\\x00", 10), trailer_remains(sealed[:-8], 10)
    (True, True)
    >>> trailer_remains(sealed[:-1] + b"\\x00", len(sealed))  # the footer is still there
    True
    >>> trailer_remains(b"FLATBUFFER\\x03\\x00\\x00\\x00abc\\x00", 10)
    False
    """
    data = memoryview(blob)
    tail = bytes(data[end:])
    if MAGIC in tail or _EXTENSION_OPENING in tail:
        return True
    footer = len(data) - FOOTER_SIZE
    if footer < 0:
        return False
    ext_len, version, reserved = _HEAD.unpack_from(data, footer)
    start = footer - ext_len - (_REGION.size if version == _REGION_VERSION else 0)
    return (version in (TRAILER_VERSION, _REGION_VERSION) and reserved == 0 and start >= 0
            and bytes(data[start:start + len(_EXTENSION_OPENING)]) == _EXTENSION_OPENING)


def unseal(blob: bytes | bytearray | memoryview) -> Unsealed:
    """Splits a sealed artifact after checking its digest; passes others through.

    Raises:
        ArtifactError: the footer is inconsistent or the digest does not
            match (some byte of the artifact changed).
    """
    data = bytes(blob)
    if not is_sealed(data):
        return Unsealed(data, None, None)
    footer = len(data) - FOOTER_SIZE
    ext_len, version, reserved = _HEAD.unpack_from(data, footer)
    if version not in (TRAILER_VERSION, _REGION_VERSION) or reserved != 0:
        raise ArtifactError(f"jaxport trailer: unknown trailer version {version}.{reserved} "
                            f"(this jaxport reads versions {TRAILER_VERSION} and {_REGION_VERSION})")
    before = footer - (_REGION.size if version == _REGION_VERSION else 0)
    if ext_len > before:
        raise ArtifactError(f"jaxport trailer: an extension of {ext_len} bytes does not fit "
                            f"in the {before} bytes before the footer")
    cut = before - ext_len
    view = memoryview(data)
    if version == TRAILER_VERSION:
        digest = hashlib.sha256(view[:footer + _HEAD.size])
    else:
        offset, length = _REGION.unpack_from(data, before)
        if offset + length > cut:
            raise ArtifactError(f"jaxport trailer: a module of {length} bytes at {offset} does "
                                f"not fit in the flatbuffer of {cut} bytes")
        digest = hashlib.sha256(view[:offset])
        digest.update(view[offset + length:footer + _HEAD.size])
        digest.update(hashlib.sha256(view[offset:offset + length]).digest())
    stored = data[footer + _HEAD.size:footer + _HEAD.size + DIGEST_SIZE]
    if digest.digest() != stored:
        raise ArtifactError(
            "The artifact's digest does not match its content: the bytes were changed "
            "after jaxport wrote them (damaged in transit or storage, or edited).")
    # A view of the checked bytes, not a copy (they cannot change: ``bytes``).
    return Unsealed(view[:cut], Extension.from_bytes(data[cut:before]), digest.hexdigest())
