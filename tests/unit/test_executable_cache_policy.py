"""The executable cache's domain: its key, its entry format and its eviction policy."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from jaxport.domain.cache_entry import CacheEntryError, decode_entry, encode_entry
from jaxport.domain.cache_eviction import (
    DEFAULT_MAX_BYTES,
    CacheConfigError,
    StoredEntry,
    entries_to_evict,
    max_bytes_from,
    parse_size,
)
from jaxport.domain.executable_key import EXECUTABLE_MAGIC, ExecutableKey

KEY = ExecutableKey(
    artifact_digest="a" * 64, program_digest="b" * 64, in_avals=("f32[8,16]",),
    in_shardings=("UnspecifiedValue",), platform="cpu", platform_version="cpu",
    device_kind="cpu", device_count=1, device_ids=(0,), process_count=1, host="x86_64:00",
    versions=(("jax", "0.10.2"), ("jaxlib", "0.10.2"), ("jaxport", "0.1.0")),
    compiler_flags=(("XLA_FLAGS", ""),))

CHANGES: dict[str, Any] = {
    "artifact_digest": "c" * 64, "program_digest": "d" * 64, "in_avals": ("f32[4,16]",),
    "in_shardings": ("SingleDeviceSharding(1)",), "platform": "cuda", "platform_version": "12.8",
    "device_kind": "H200", "device_count": 2, "device_ids": (1,), "process_count": 2,
    "host": "aarch64:11", "versions": (("jaxlib", "0.10.3"),),
    "compiler_flags": (("XLA_FLAGS", "--xla_cpu_enable_fast_math=true"),),
}


def test_the_key_round_trips_through_its_encoding() -> None:
    assert ExecutableKey.decode(KEY.encode()) == KEY


@pytest.mark.parametrize("field", sorted(CHANGES))
def test_every_field_of_the_key_changes_its_digest(field: str) -> None:
    changed = dataclasses.replace(KEY, **{field: CHANGES[field]})
    assert changed.digest() != KEY.digest()
    assert changed.encode() != KEY.encode()


def test_the_changes_cover_every_field() -> None:
    assert set(CHANGES) == {f.name for f in dataclasses.fields(ExecutableKey)}


def test_bytes_that_are_not_a_key_raise_a_cache_entry_error() -> None:
    with pytest.raises(CacheEntryError, match="not an executable key"):
        ExecutableKey.decode(b'{"platform": "cpu"}')


def test_an_entry_returns_its_payload_for_its_key() -> None:
    blob = encode_entry(EXECUTABLE_MAGIC, KEY.encode(), b"executable bytes")
    assert decode_entry(blob, EXECUTABLE_MAGIC, KEY.encode()) == b"executable bytes"


@pytest.mark.parametrize("damage, reason", [
    (lambda b: b[:10], "truncated"),
    (lambda b: b[:-3], "truncated"),
    (lambda b: b + b"x", "truncated"),
    (lambda b: b"NOTJAXPT" + b[8:], "foreign"),
    (lambda b: b[:8] + b"\x07\x00" + b[10:], "format version 7"),
    (lambda b: b[:-1] + bytes([b[-1] ^ 1]), "checksum mismatch"),
])
def test_a_damaged_entry_says_what_is_wrong(damage: object, reason: str) -> None:
    blob = encode_entry(EXECUTABLE_MAGIC, KEY.encode(), b"executable bytes")
    with pytest.raises(CacheEntryError, match=reason):
        decode_entry(damage(blob), EXECUTABLE_MAGIC, KEY.encode())  # type: ignore[operator]


def test_an_entry_for_another_key_is_rejected() -> None:
    other = dataclasses.replace(KEY, platform="cuda")
    blob = encode_entry(EXECUTABLE_MAGIC, other.encode(), b"executable bytes")
    with pytest.raises(CacheEntryError, match="key mismatch"):
        decode_entry(blob, EXECUTABLE_MAGIC, KEY.encode())


def test_eviction_removes_the_least_recently_used_until_the_rest_fits() -> None:
    entries = [StoredEntry("new", 40, 30.0), StoredEntry("old", 40, 10.0), StoredEntry("mid", 40, 20.0)]
    assert entries_to_evict(entries, max_bytes=100) == ("old",)
    assert entries_to_evict(entries, max_bytes=40) == ("old", "mid")
    assert entries_to_evict(entries, max_bytes=120) == ()


def test_eviction_removes_the_entry_just_written_last() -> None:
    entries = [StoredEntry("just-written", 40, 1.0), StoredEntry("other", 40, 2.0)]
    assert entries_to_evict(entries, max_bytes=50, keep="just-written") == ("other",)
    assert entries_to_evict(entries, max_bytes=10, keep="just-written") == ("other", "just-written")


@pytest.mark.parametrize("text, size", [
    ("1048576", 1 << 20), ("512M", 512 << 20), ("2g", 2 << 30), ("1GiB", 1 << 30), ("10 KB", 10 << 10),
])
def test_sizes_parse_with_binary_units(text: str, size: int) -> None:
    assert parse_size(text) == size


def test_an_unparsable_size_names_the_variable() -> None:
    with pytest.raises(CacheConfigError, match="JAXPORT_CACHE_MAX_BYTES='lots'"):
        parse_size("lots")


def test_an_unset_bound_is_the_documented_default() -> None:
    assert max_bytes_from(None) == max_bytes_from("") == DEFAULT_MAX_BYTES == 2 * 1024 ** 3


@pytest.mark.parametrize("name", ["cache_entry", "cache_eviction", "executable_key"])
def test_docstring_examples(name: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(f"jaxport.domain.{name}"))
    assert result.attempted > 0 and result.failed == 0
