"""Files checked before, known by identity (:mod:`jaxport.adapters.storage.checked_directory`), without JAX."""

from __future__ import annotations

import os
from pathlib import Path

from jaxport.adapters.storage.checked_directory import SETTLED_NS, FileIdentity, StatKnownFiles, still
from tests.helpers.fake_verdicts import FakeVerdictStore


_FILE = FileIdentity(device=1, inode=2, size=3, mtime_ns=10 * SETTLED_NS, ctime_ns=10 * SETTLED_NS)


def test_a_file_is_settled_once_both_its_times_are_old_enough() -> None:
    assert _FILE.settled(11 * SETTLED_NS)
    assert not _FILE.settled(11 * SETTLED_NS - 1)
    later = FileIdentity(1, 2, 3, mtime_ns=10 * SETTLED_NS, ctime_ns=12 * SETTLED_NS)
    assert not later.settled(11 * SETTLED_NS)


def test_a_check_is_remembered_for_that_identity_and_that_digest_only() -> None:
    known = StatKnownFiles(FakeVerdictStore())
    known.remember(_FILE, "ab" * 32, now_ns=11 * SETTLED_NS)
    assert known.known(_FILE, "ab" * 32)
    assert not known.known(_FILE, "cd" * 32)  # the manifest now records another digest
    for changed in (FileIdentity(1, 2, 4, _FILE.mtime_ns, _FILE.ctime_ns),  # size
                    FileIdentity(1, 9, 3, _FILE.mtime_ns, _FILE.ctime_ns),  # another inode
                    FileIdentity(1, 2, 3, _FILE.mtime_ns, _FILE.ctime_ns + 1),  # written since
                    FileIdentity(5, 2, 3, _FILE.mtime_ns, _FILE.ctime_ns)):  # another device
        assert not known.known(changed, "ab" * 32), changed


def test_a_file_that_has_not_settled_is_not_remembered() -> None:
    store = FakeVerdictStore()
    StatKnownFiles(store).remember(_FILE, "ab" * 32, now_ns=11 * SETTLED_NS - 1)
    assert not store.verdicts


def test_still_compares_the_named_file_with_the_identity_read(tmp_path: Path) -> None:
    path = tmp_path / "weights.bin"
    path.write_bytes(b"12345")
    identity = FileIdentity.of(os.stat(path))
    assert still(path, identity)
    (tmp_path / "other.bin").write_bytes(b"12345")
    os.replace(tmp_path / "other.bin", path)  # the same bytes under the same name: another file
    assert not still(path, identity)
    assert not still(tmp_path / "missing.bin", identity)
