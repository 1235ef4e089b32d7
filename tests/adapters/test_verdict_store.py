"""Verification verdicts on disk: entries of the bounded cache store under ``verified``."""

from __future__ import annotations

import os
import time
from pathlib import Path

from jaxport.adapters.verdict_store import FileVerdictStore
from jaxport.domain.verification import Verdict, verdict_key


def test_a_verdict_is_read_back_from_an_entry_of_the_verified_folder(cache_dir: Path) -> None:
    store = FileVerdictStore()
    key = verdict_key("ab" * 32, ["my_target"], verifier="jaxlib 1")
    refused = Verdict(False, ("argument 0 of main differs",))
    store.put(key, refused)
    assert store.get(key) == refused
    assert (cache_dir / "verified" / f"{key}.entry").is_file()
    assert store.get(verdict_key("cd" * 32, [])) is None
    store.put("../escape", Verdict(True))  # not a key: neither stored nor an error
    assert store.get("../escape") is None and not (cache_dir / "escape.entry").exists()


def test_verdicts_are_bounded_and_the_least_recently_read_is_evicted(cache_dir: Path) -> None:
    keys = [verdict_key(c * 64, []) for c in "abc"]
    size = len(Verdict(True).to_json())
    store = FileVerdictStore(max_bytes=2 * size)
    for age, key in zip((30, 20), keys):
        store.put(key, Verdict(True))
        then = time.time() - age
        os.utime(cache_dir / "verified" / f"{key}.entry", (then, then))
    assert store.get(keys[0]) == Verdict(True)  # the read makes keys[1] the least recently used
    store.put(keys[2], Verdict(True))
    assert sorted(p.name for p in (cache_dir / "verified").iterdir()) == sorted(f"{k}.entry" for k in keys[::2])
    assert store.get(keys[1]) is None
