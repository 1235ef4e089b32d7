"""The cache directory: chosen by JAXPORT_CACHE_DIR, private, switchable off."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from jaxport.adapters.cache_dir import cache_root, cache_subdir


def test_the_configured_directory_is_created_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAXPORT_CACHE_DIR", str(tmp_path / "c"))
    root = cache_root()
    assert root == tmp_path / "c"
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    sub = cache_subdir("executables")
    assert sub is not None and sub.is_dir() and stat.S_IMODE(sub.stat().st_mode) == 0o700


def test_an_empty_value_turns_caching_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAXPORT_CACHE_DIR", "")
    assert cache_root() is None
    assert cache_subdir("executables") is None


def test_unset_means_the_user_cache_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JAXPORT_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "jaxport"


def test_the_test_run_never_points_at_the_home_directory() -> None:
    root = cache_root()
    assert root is not None and not str(root).startswith(str(Path.home() / ".cache"))
