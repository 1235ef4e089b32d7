"""The module cache: plain bytecode by module digest, written off the lowering's thread."""

from __future__ import annotations

import hashlib
import threading
import warnings
from pathlib import Path

import pytest

from jaxport.adapters.cache_store import DirectoryCacheStore
from jaxport.adapters.module_cache import PlainModuleCache
from jaxport.domain.cache_entry import CacheWarning
from jaxport.errors import CacheConfigError

DIGEST = hashlib.sha256(b"a portable artifact").digest()


def test_a_stored_module_is_read_back_after_the_writer_is_done(cache_dir: Path) -> None:
    cache = PlainModuleCache()
    assert cache.enabled() and cache.get(DIGEST) is None
    cache.put(DIGEST, b"plain bytecode")
    cache.flush()
    assert cache.get(DIGEST) == b"plain bytecode"
    assert cache.get(hashlib.sha256(b"another").digest()) is None
    assert len(list((cache_dir / "modules").glob("*.entry"))) == 1


def test_the_write_happens_on_another_thread(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    threads: list[threading.Thread] = []
    write = DirectoryCacheStore.write

    def spy(self: DirectoryCacheStore, name: str, data: bytes) -> None:
        threads.append(threading.current_thread())
        write(self, name, data)

    monkeypatch.setattr(DirectoryCacheStore, "write", spy)
    PlainModuleCache().put(DIGEST, b"plain bytecode")
    PlainModuleCache.flush()
    assert threads and threads[0] is not threading.current_thread()


def test_the_write_goes_where_the_cache_was_when_it_was_decided(
        tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = PlainModuleCache()
    cache.put(DIGEST, b"plain bytecode")
    monkeypatch.setenv("JAXPORT_CACHE_DIR", str(tmp_path / "elsewhere"))
    cache.flush()
    assert not (tmp_path / "elsewhere" / "modules").exists() or not list(
        (tmp_path / "elsewhere" / "modules").iterdir())
    monkeypatch.setenv("JAXPORT_CACHE_DIR", str(cache_dir))
    assert cache.get(DIGEST) == b"plain bytecode"


def test_an_empty_cache_dir_turns_the_module_cache_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAXPORT_CACHE_DIR", "")
    cache = PlainModuleCache()
    cache.put(DIGEST, b"plain bytecode")
    cache.flush()
    assert not cache.enabled() and cache.get(DIGEST) is None


def test_a_damaged_entry_is_ignored_with_a_warning_and_removed(cache_dir: Path) -> None:
    cache = PlainModuleCache()
    cache.put(DIGEST, b"plain bytecode")
    cache.flush()
    entry, = (cache_dir / "modules").glob("*.entry")
    entry.write_bytes(entry.read_bytes()[:-3])
    with pytest.warns(CacheWarning, match="ignoring the cached module .*truncated"):
        assert cache.get(DIGEST) is None
    assert not entry.exists()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cache.get(DIGEST) is None


def test_a_bad_size_bound_is_reported_by_the_put_itself(cache_dir: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAXPORT_CACHE_MAX_BYTES", "lots")
    with pytest.raises(CacheConfigError, match="JAXPORT_CACHE_MAX_BYTES='lots'"):
        PlainModuleCache().put(DIGEST, b"plain bytecode")
