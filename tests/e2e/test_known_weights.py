"""A weights file checked before and unchanged since is not hashed again, on the JAX path and on a target.

The verdicts go to a folder of each test; the time a file must have settled
before its check is remembered is set to 0 here (the rule itself is tested
in tests/adapters/test_known_files.py), so that files written by the test
count as settled.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport
from jaxport.adapters.storage import atomic_directory, checked_directory, opened_directory
from jaxport.errors import ArtifactError

_X = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)


def _predict(p: dict[str, jax.Array], x: jax.Array) -> jax.Array:
    return jnp.tanh(x @ p["w"] + p["b"])


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("known") / "bundle"
    params = {"w": jnp.arange(12, dtype=jnp.float32).reshape(4, 3) / 10, "b": jnp.ones((3,), jnp.float32)}
    exported = jaxport.export(jax.jit(_predict))(params, jax.ShapeDtypeStruct((2, 4), jnp.float32))
    jaxport.save_bundle(root, {"predict": exported}, params)
    return root


@pytest.fixture()
def hashed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many weights each load hashed; the verdicts in a folder of the test; files settle at once."""
    monkeypatch.setenv("JAXPORT_CACHE_DIR", str(tmp_path / "verdicts"))
    monkeypatch.setattr(checked_directory, "SETTLED_NS", 0)
    counts: list[int] = []
    real = atomic_directory.sha256_many

    def counting(views: list[Any]) -> list[str]:
        counts.append(len(views))
        return real(views)

    monkeypatch.setattr(opened_directory, "sha256_many", counting)
    return counts


def _rewrite_one_byte(path: Path) -> None:
    """Another file of the same size under the same name: one byte of the last weight changed."""
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.with_suffix(".new").write_bytes(data)
    os.replace(path.with_suffix(".new"), path)


def _loads(root: Path, load: Callable[[Path], Any], hashed: list[int]) -> None:
    load(root)
    assert hashed == [2]  # w and b
    load(root)
    assert hashed == [2], "a file checked before and unchanged since was hashed again"
    _rewrite_one_byte(root / "params.safetensors")
    with pytest.raises(ArtifactError, match="params.safetensors|weight"):
        load(root)
    assert hashed == [2, 2]


def test_load_bundle_hashes_the_weights_once(bundle: Path, tmp_path: Path, hashed: list[int]) -> None:
    root = tmp_path / "bundle"
    shutil.copytree(bundle, root)
    _loads(root, jaxport.load_bundle, hashed)


def test_load_converted_hashes_the_weights_once(bundle: Path, tmp_path: Path, hashed: list[int]) -> None:
    pytest.importorskip("onnxruntime", reason="needs the jaxport[onnx] extra")
    root = tmp_path / "onnx"
    jaxport.convert(bundle, root, to="onnx")
    hashed.clear()  # the conversion read the bundle
    _loads(root, lambda path: jaxport.load_converted(path, verify=False), hashed)


def test_without_a_verdict_folder_every_load_hashes(bundle: Path, tmp_path: Path, hashed: list[int],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAXPORT_CACHE_DIR", "")
    jaxport.load_bundle(bundle)
    jaxport.load_bundle(bundle)
    assert hashed == [2, 2]
