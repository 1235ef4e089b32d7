"""Verification verdicts on disk: small files in their own directory, bounded in number."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from jaxport.adapters.storage.verdict_store import MAX_VERDICT_BYTES, FileVerdictStore, verdict_dir
from jaxport.domain.artifact.verification import Verdict, verdict_key


@pytest.fixture
def verdicts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh verdict directory of this test, set as ``JAXPORT_CACHE_DIR``."""
    directory = tmp_path / "verdicts"
    monkeypatch.setenv("JAXPORT_CACHE_DIR", str(directory))
    return directory


def test_a_verdict_is_read_back_from_its_file_in_a_private_directory(verdicts: Path) -> None:
    store = FileVerdictStore()
    key = verdict_key("v1", "ab" * 32, ["my_target"], "jaxlib 1")
    refused = Verdict(False, ("argument 0 of main differs",))
    store.put(key, refused)
    assert store.get(key) == refused
    assert [p.name for p in verdicts.iterdir()] == [f"{key}.json"]
    assert stat.S_IMODE(verdicts.stat().st_mode) == 0o700
    assert store.get(verdict_key("v1", "cd" * 32)) is None
    store.put("../escape", Verdict(True))  # not a key: neither stored nor an error
    assert store.get("../escape") is None and not (verdicts.parent / "escape.json").exists()


def test_the_oldest_verdicts_beyond_the_bound_are_removed(verdicts: Path) -> None:
    keys = [verdict_key("v1", c * 64) for c in "abcd"]
    store = FileVerdictStore(max_verdicts=2)
    for age, key in zip((30, 20, 10), keys):
        store.put(key, Verdict(True))
        then = time.time() - age
        os.utime(verdicts / f"{key}.json", (then, then))
    assert sorted(p.name for p in verdicts.iterdir()) == sorted(f"{k}.json" for k in keys[1:3])
    assert store.get(keys[1]) == Verdict(True)  # the read makes keys[2] the least recently used
    store.put(keys[3], Verdict(True))
    assert sorted(p.name for p in verdicts.iterdir()) == sorted(f"{k}.json" for k in (keys[1], keys[3]))


def test_a_damaged_or_oversized_verdict_is_not_used(verdicts: Path) -> None:
    store = FileVerdictStore()
    key = verdict_key("v1", "ef" * 32)
    store.put(key, Verdict(True))
    (verdicts / f"{key}.json").write_bytes(b'{"version": 1, "ok": tr')
    assert store.get(key) is None
    (verdicts / f"{key}.json").write_bytes(Verdict(True).to_json() + b" " * MAX_VERDICT_BYTES)
    assert store.get(key) is None
    long = Verdict(False, ("x" * MAX_VERDICT_BYTES,))
    store.put(verdict_key("v1", "01" * 32), long)
    assert store.get(verdict_key("v1", "01" * 32)) is None


def test_the_directory_defaults_to_the_users_cache_and_an_empty_value_turns_remembering_off(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JAXPORT_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert verdict_dir() == tmp_path / "xdg" / "jaxport" / "verdicts"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert verdict_dir() == tmp_path / "home" / ".cache" / "jaxport" / "verdicts"
    monkeypatch.setenv("JAXPORT_CACHE_DIR", "")
    assert verdict_dir() is None
    FileVerdictStore().put(verdict_key("v1", "ab" * 32), Verdict(True))
    assert FileVerdictStore().get(verdict_key("v1", "ab" * 32)) is None
    assert not (tmp_path / "home").exists()
