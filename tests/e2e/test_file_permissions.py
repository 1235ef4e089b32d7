"""End to end: what jaxport writes for others to read gets the permissions of open() and os.makedirs.

A model exported by one user is often served by another (a service account,
a container's user): an artifact, a bundle and its files, and arrays written
by ``jaxport run`` must end as ``open()`` and ``os.makedirs`` would leave
them under the process's umask, not private to their writer. The cache stays
private whatever the umask.
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport
from jaxport.adapters.storage.array_files import write_arrays
from jaxport.adapters.storage.verdict_store import FileVerdictStore
from jaxport.domain.artifact.verification import Verdict
from jaxport.adapters.storage.atomic_files import write_atomically

PARAMS = {"w": np.full((3,), 0.5, np.float32)}
X = np.ones((2, 3), np.float32)


def model(params: dict[str, jax.Array], x: jax.Array) -> jax.Array:
    return jnp.sin(x * params["w"])


@functools.cache
def exported() -> jaxport.Exported:
    return jaxport.export(jax.jit(model))(PARAMS, X)


@pytest.fixture(params=[0o022, 0o077], ids=["umask022", "umask077"])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    """Runs the test under this umask; the process's own comes back afterwards, whatever happens."""
    mask: int = request.param
    previous = os.umask(mask)
    try:
        yield mask
    finally:
        os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def file_mode(umask: int) -> int:
    return 0o666 & ~umask


def directory_mode(umask: int) -> int:
    return 0o777 & ~umask


def test_a_saved_artifact_has_the_mode_open_would_give(tmp_path: Path, umask: int) -> None:
    path = tmp_path / "model.jaxport"
    jaxport.save(exported(), path)
    assert mode(path) == file_mode(umask)
    jaxport.save(exported(), path)  # replacing a file, too
    assert mode(path) == file_mode(umask)


def test_an_atomic_write_takes_an_explicit_mode_less_the_umask(tmp_path: Path, umask: int) -> None:
    write_atomically(tmp_path / "a", b"data")
    write_atomically(tmp_path / "b", b"data", mode=0o640)
    assert (mode(tmp_path / "a"), mode(tmp_path / "b")) == (file_mode(umask), 0o640 & ~umask)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]


def test_arrays_written_for_the_command_line_have_the_mode_open_would_give(tmp_path: Path, umask: int) -> None:
    write_arrays(tmp_path / "out.npz", [np.arange(3)])
    assert mode(tmp_path / "out.npz") == file_mode(umask)


def test_a_bundle_and_its_files_have_the_modes_of_makedirs_and_open(tmp_path: Path, umask: int) -> None:
    path = tmp_path / "model"
    for _ in range(2):  # a new bundle, then one that replaces it
        jaxport.save_bundle(path, {"predict": exported()}, PARAMS)
        assert mode(path) == directory_mode(umask)
        files = sorted(path.iterdir())
        assert [p.name for p in files] == ["manifest.json", "params.safetensors", "predict.jaxport"]
        assert {p.name: mode(p) for p in files} == {p.name: file_mode(umask) for p in files}
    assert [p.name for p in tmp_path.iterdir()] == ["model"]


def test_the_verdicts_directory_stays_private_whatever_the_umask(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, umask: int) -> None:
    verdicts = tmp_path / "verdicts"
    monkeypatch.setenv("JAXPORT_CACHE_DIR", str(verdicts))
    FileVerdictStore().put("abc", Verdict(True))
    assert mode(verdicts) == 0o700
    assert [p.name for p in verdicts.iterdir()] == ["abc.json"]
