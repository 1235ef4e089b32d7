"""The bytes of one cache entry: a header that makes damage and mix-ups detectable.

An entry is ``header | key | payload``. The header holds a magic string
naming the kind of entry, the format version, the lengths of the key and of
the payload, and a SHA-256 of both. A reader that expects a given magic and
key gets the payload back only when every part matches; otherwise it learns
why (:class:`CacheEntryError`), so the caller can warn and rebuild the entry.
Entries are never pickled: the payload is opaque bytes.

This module knows nothing of files or of what the payload is.

>>> blob = encode_entry(b"JXPDEMO1", b"key", b"payload")
>>> decode_entry(blob, b"JXPDEMO1", b"key")
b'payload'
>>> decode_entry(blob[:-1], b"JXPDEMO1", b"key")
Traceback (most recent call last):
...
jaxport.errors.CacheEntryError: truncated: 6 payload bytes, the header announces 7
"""

from __future__ import annotations

import hashlib
import struct

from .errors import JaxportError

#: The layout version of the header below; a reader rejects any other.
ENTRY_FORMAT_VERSION = 1
_HEADER = struct.Struct("<8sHIQ32s")  # magic, version, key length, payload length, sha256


class CacheEntryError(JaxportError, ValueError):
    """A cache entry is damaged, truncated, foreign or for another key."""


class CacheWarning(UserWarning):
    """A cache entry was unusable and ignored; the work it held is redone."""


def encode_entry(magic: bytes, key: bytes, payload: bytes) -> bytes:
    """The entry bytes for ``payload`` stored under ``key``.

    Args:
        magic: 8 bytes naming the kind of entry (executables, verdicts...).
    """
    if len(magic) != 8:
        raise ValueError(f"the magic of a cache entry has 8 bytes, got {len(magic)}")
    digest = hashlib.sha256(key + payload).digest()
    return _HEADER.pack(magic, ENTRY_FORMAT_VERSION, len(key), len(payload), digest) + key + payload


def decode_entry(data: bytes, magic: bytes, key: bytes) -> bytes:
    """The payload of ``data``, checked against the expected ``magic`` and ``key``.

    Raises:
        CacheEntryError: naming what is wrong: a foreign or truncated file,
            another format version, a checksum mismatch, another key.
    """
    if len(data) < _HEADER.size:
        raise CacheEntryError(f"truncated: {len(data)} bytes, shorter than the {_HEADER.size}-byte header")
    found_magic, version, key_len, payload_len, digest = _HEADER.unpack_from(data)
    if found_magic != magic:
        raise CacheEntryError(f"foreign: starts with {found_magic!r}, not {magic!r}")
    if version != ENTRY_FORMAT_VERSION:
        raise CacheEntryError(f"format version {version}, this jaxport reads {ENTRY_FORMAT_VERSION}")
    body = data[_HEADER.size:]
    if len(body) != key_len + payload_len:
        raise CacheEntryError(f"truncated: {len(body) - key_len} payload bytes, "
                              f"the header announces {payload_len}")
    if hashlib.sha256(body).digest() != digest:
        raise CacheEntryError("checksum mismatch: the entry was damaged")
    if body[:key_len] != key:
        raise CacheEntryError("key mismatch: the entry was stored for another key")
    return body[key_len:]


def stored_key(data: bytes) -> bytes:
    """The key bytes recorded in an entry's header (for diagnostics; unchecked).

    Raises:
        CacheEntryError: the data are shorter than the header says.
    """
    if len(data) < _HEADER.size:
        raise CacheEntryError(f"truncated: {len(data)} bytes, shorter than the {_HEADER.size}-byte header")
    key_len = _HEADER.unpack_from(data)[2]
    if len(data) < _HEADER.size + key_len:
        raise CacheEntryError("truncated: the key is cut short")
    return data[_HEADER.size:_HEADER.size + key_len]
