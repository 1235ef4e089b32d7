"""The on-disk store of cache entries: atomic, private, bounded, least recently used first."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from jaxport.adapters.cache_store import DirectoryCacheStore


def test_an_entry_written_is_read_back_from_a_private_directory(cache_dir: Path) -> None:
    store = DirectoryCacheStore("things")
    store.write("abc", b"payload")
    assert store.read("abc") == b"payload"
    assert stat.S_IMODE((cache_dir / "things").stat().st_mode) == 0o700
    assert stat.S_IMODE((cache_dir / "things" / "abc.entry").stat().st_mode) == 0o600
    assert store.read("missing") is None


def test_an_empty_cache_dir_turns_the_store_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAXPORT_CACHE_DIR", "")
    store = DirectoryCacheStore("things")
    store.write("abc", b"payload")
    assert store.directory() is None and store.read("abc") is None


def test_names_that_could_escape_the_directory_are_refused(cache_dir: Path) -> None:
    with pytest.raises(ValueError, match="not a cache entry name"):
        DirectoryCacheStore("things").path("../evil")


def _age(store: DirectoryCacheStore, name: str, seconds_ago: float) -> None:
    path = store.path(name)
    assert path is not None
    then = time.time() - seconds_ago
    os.utime(path, (then, then))


def test_writes_evict_the_least_recently_used_down_to_the_bound(cache_dir: Path) -> None:
    store = DirectoryCacheStore("things", max_bytes=250)
    for name, age in (("a", 30), ("b", 20)):
        store.write(name, b"x" * 100)
        _age(store, name, age)
    assert store.read("a") is not None  # reading "a" makes "b" the least recently used
    store.write("c", b"x" * 100)
    assert sorted(e.name for e in store.entries()) == ["a", "c"]
    assert sum(e.size for e in store.entries()) <= 250


def test_the_bound_comes_from_the_environment(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAXPORT_CACHE_MAX_BYTES", "1K")
    store = DirectoryCacheStore("things")
    assert store.max_bytes == 1024
    store.write("too-big", b"x" * 2000)
    assert store.read("too-big") is None


def test_stale_temporary_files_of_crashed_writers_are_removed(cache_dir: Path) -> None:
    store = DirectoryCacheStore("things")
    directory = store.directory()
    assert directory is not None
    stale, fresh = directory / ".abc.entry.1.tmp", directory / ".abc.entry.2.tmp"
    stale.write_bytes(b"half")
    fresh.write_bytes(b"half")
    os.utime(stale, (time.time() - 7200, time.time() - 7200))
    store.evict()
    assert not stale.exists() and fresh.exists()
