"""End to end: saving artifacts to files atomically, and loading them."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport
from jaxport.adapters.storage import atomic_files
from jaxport.errors import ArtifactError

X = np.linspace(-1.0, 1.0, 6, dtype=np.float32).reshape(2, 3)


def model(params: dict[str, Any], x: Any) -> Any:
    return jnp.sum(jnp.tanh(x @ params["w"]))


PARAMS = {"w": np.full((3, 4), 0.25, np.float32)}


@functools.cache
def exported() -> jaxport.Exported:
    return jaxport.export(jax.jit(model))(PARAMS, X)


@functools.cache
def other_exported() -> jaxport.Exported:
    return jaxport.export(jax.jit(jnp.cos))(X)


def listing(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


@pytest.mark.parametrize("vjp_order", [0, 1])
def test_a_saved_artifact_loads_back_and_calls_like_the_original(tmp_path: Path, vjp_order: int) -> None:
    path = tmp_path / "model.jaxexport"
    jaxport.save(exported(), path, vjp_order=vjp_order)
    assert path.read_bytes() == exported().serialize(vjp_order)
    loaded = jaxport.load(path)
    assert loaded.in_tree == exported().in_tree and loaded.in_avals == exported().in_avals
    np.testing.assert_allclose(loaded.call(PARAMS, X), model(PARAMS, X), rtol=1e-6)
    assert loaded.has_vjp() == (vjp_order > 0)
    if vjp_order:
        np.testing.assert_allclose(jax.grad(loaded.call)(PARAMS, X)["w"],
                                   jax.grad(model)(PARAMS, X)["w"], rtol=1e-5)
    assert listing(tmp_path) == ["model.jaxexport"]


def test_save_and_load_accept_a_string_path(tmp_path: Path) -> None:
    path = str(tmp_path / "model.bin")
    jaxport.save(exported(), path)
    assert jaxport.load(path).fun_name == "model"


def test_save_replaces_an_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "model.bin"
    jaxport.save(other_exported(), path)
    jaxport.save(exported(), path)
    assert path.read_bytes() == exported().serialize()
    assert listing(tmp_path) == ["model.bin"]


def test_a_write_that_fails_midway_leaves_the_old_file_intact_and_no_temporary_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "model.bin"
    jaxport.save(other_exported(), path)
    old = path.read_bytes()
    seen_midway: list[str] = []

    def half_then_fail(tmp: Any, data: bytes | bytearray) -> None:
        tmp.write(bytes(data[: len(data) // 2]))
        tmp.flush()
        assert 0 < os.fstat(tmp.fileno()).st_size < len(data)  # half of the new bytes are on disk
        seen_midway.extend(listing(tmp_path))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic_files, "write_all", half_then_fail)
    with pytest.raises(OSError, match="No space left on device"):
        jaxport.save(exported(), path)
    assert len(seen_midway) == 2 and "model.bin" in seen_midway  # the temporary sat next to it
    assert path.read_bytes() == old
    assert listing(tmp_path) == ["model.bin"]


@pytest.mark.parametrize("interruption", [OSError(5, "Input/output error"), KeyboardInterrupt()],
                         ids=["io_error", "keyboard_interrupt"])
def test_an_interrupted_fsync_leaves_the_old_file_intact_and_no_temporary_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, interruption: BaseException) -> None:
    path = tmp_path / "model.bin"
    jaxport.save(other_exported(), path)
    old = path.read_bytes()

    def interrupted(fd: int) -> None:
        raise interruption

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(type(interruption)):
        jaxport.save(exported(), path)
    monkeypatch.undo()
    assert path.read_bytes() == old
    assert listing(tmp_path) == ["model.bin"]


class Unregistered(NamedTuple):
    x: Any


def test_a_save_that_cannot_serialize_leaves_the_old_file_intact(tmp_path: Path) -> None:
    path = tmp_path / "model.bin"
    jaxport.save(other_exported(), path)
    old = path.read_bytes()
    exp = jaxport.export(jax.jit(lambda u: u.x + 1.0))(Unregistered(X))
    with pytest.raises(ValueError, match="unregistered type"):
        jaxport.save(exp, path)
    assert path.read_bytes() == old
    assert listing(tmp_path) == ["model.bin"]


def test_save_into_a_missing_directory_raises_oserror_and_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        jaxport.save(exported(), tmp_path / "missing" / "model.bin")
    assert listing(tmp_path) == []


def test_loading_a_garbage_file_raises_artifact_error(tmp_path: Path) -> None:
    path = tmp_path / "garbage.bin"
    path.write_bytes(b"\x00\x01 definitely not a flatbuffer " * 8)
    with pytest.raises(ArtifactError):
        jaxport.load(path)
    assert issubclass(ArtifactError, ValueError)


def test_loading_an_empty_file_raises_artifact_error(tmp_path: Path) -> None:
    path = tmp_path / "empty.bin"
    path.write_bytes(b"")
    with pytest.raises(ArtifactError):
        jaxport.load(path)


def test_loading_a_missing_file_raises_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        jaxport.load(tmp_path / "nothing.bin")


def test_a_file_written_by_jax_export_loads_and_calls(tmp_path: Path) -> None:
    path = tmp_path / "from_jax.bin"
    path.write_bytes(jax.export.export(jax.jit(model))(PARAMS, X).serialize(vjp_order=1))
    loaded = jaxport.load(path)
    np.testing.assert_allclose(loaded.call(PARAMS, X), model(PARAMS, X), rtol=1e-6)
    np.testing.assert_allclose(jax.grad(loaded.call)(PARAMS, X)["w"], jax.grad(model)(PARAMS, X)["w"],
                               rtol=1e-5)


def test_a_file_saved_by_jaxport_loads_in_jax_export(tmp_path: Path) -> None:
    path = tmp_path / "for_jax.bin"
    jaxport.save(exported(), path)
    again = jax.export.deserialize(bytearray(path.read_bytes()))
    np.testing.assert_allclose(again.call(PARAMS, X), model(PARAMS, X), rtol=1e-6)
