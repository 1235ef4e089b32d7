"""Each entry point that takes a path says what the path is when it is the wrong one, and what reads it
(issue 54): one recogniser (``jaxport.domain.path_kind``) behind ``load``, ``load_bundle``,
``load_converted``, ``inspect``, ``jaxport run``, ``jaxport inspect`` and ``jaxport serve``."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport
from jaxport.adapters.storage.path_kind import path_kind
from jaxport.domain.path_kind import PathKind
from jaxport.errors import ArtifactError
from tests.helpers.serving import free_port


@pytest.fixture(scope="module")
def paths(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    pytest.importorskip("onnx", reason="converting to ONNX needs the jaxport[onnx] extra")
    root = tmp_path_factory.mktemp("kinds")
    params = {"w": np.ones((4, 3), np.float32)}
    exp = jaxport.export(jax.jit(lambda p, x: jnp.tanh(x @ p["w"])))(
        params, jax.ShapeDtypeStruct((2, 4), jnp.float32))
    jaxport.save(exp, root / "f.jaxport")
    jaxport.save_bundle(root / "bundle", {"f": exp}, params)
    jaxport.convert(root / "bundle", root / "onnx", to="onnx")
    np.save(root / "x.npy", np.ones((2, 4), np.float32))
    (root / "empty").mkdir()
    return {"artifact": root / "f.jaxport", "bundle": root / "bundle", "converted": root / "onnx",
            "onnx": root / "onnx" / "f.onnx", "npy": root / "x.npy", "empty": root / "empty",
            "missing": root / "missing"}


def test_the_recogniser_tells_each_kind_apart(paths: dict[str, Path]) -> None:
    assert {name: path_kind(p) for name, p in paths.items()} == {
        "artifact": PathKind.ARTIFACT, "bundle": PathKind.BUNDLE, "converted": PathKind.CONVERTED,
        "onnx": PathKind.ONNX, "npy": PathKind.NUMPY, "empty": PathKind.DIRECTORY, "missing": PathKind.MISSING}


WRONG_LOADERS: list[tuple[str, str, Callable[[Path], Any], str]] = [
    ("load of a bundle", "bundle", jaxport.load, r"is a bundle, not an artifact file: load it with jaxport\.load_bundle"),
    ("load of a converted directory", "converted", jaxport.load,
     r"is a directory that jaxport converted, not an artifact file: load it with jaxport\.load_converted"),
    ("load of an ONNX model", "onnx", jaxport.load, r"is an ONNX model, not an artifact file: .*jaxport\.load_converted"),
    ("load_converted of a bundle", "bundle", jaxport.load_converted,
     r"is a bundle, not a directory that jaxport converted: load it with jaxport\.load_bundle"),
    ("load_converted of an artifact", "artifact", jaxport.load_converted,
     r"is an artifact file, not a directory that jaxport converted: load it with jaxport\.load "),
    ("load_bundle of a converted directory", "converted", jaxport.load_bundle,
     r"is a directory that jaxport converted, not a bundle: load it with jaxport\.load_converted"),
    ("load_bundle of an artifact", "artifact", jaxport.load_bundle, r"is an artifact file, not a bundle: .*jaxport\.load "),
    ("inspect of an ONNX model", "onnx", jaxport.inspect, r"is an ONNX model, not an artifact file or a bundle"),
    ("inspect of a converted directory", "converted", jaxport.inspect,
     r"is a directory that jaxport converted, not an artifact file or a bundle: load it with jaxport\.load_converted"),
]


@pytest.mark.parametrize("case", WRONG_LOADERS, ids=[c[0] for c in WRONG_LOADERS])
def test_the_wrong_loader_says_what_the_path_is_and_what_reads_it(
        case: tuple[str, str, Callable[[Path], Any], str], paths: dict[str, Path]) -> None:
    _, kind, loader, message = case
    with pytest.raises(ArtifactError, match=message) as raised:
        loader(paths[kind])
    assert str(paths[kind]) in str(raised.value)


def jaxport_cli(*args: str | os.PathLike[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "jaxport", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


def test_run_and_inspect_say_what_a_model_file_or_an_array_file_is(paths: dict[str, Path]) -> None:
    done = jaxport_cli("run", paths["npy"])
    assert done.returncode == 2 and f"jaxport run: ArtifactError: {paths['npy']} is NumPy arrays (.npy), not an " \
        "artifact file, a bundle or a directory that jaxport converted: arrays are a call's inputs" in done.stderr
    done = jaxport_cli("inspect", paths["onnx"], paths["artifact"])
    assert done.returncode == 2 and f"{paths['onnx']} is an ONNX model, not" in done.stderr
    assert done.stdout.startswith(f"{paths['artifact']}:\n")  # the others are still shown


@pytest.mark.parametrize("kind", ["missing", "empty", "onnx"])
def test_serve_checks_its_path_before_it_binds_a_port(kind: str, paths: dict[str, Path]) -> None:
    port = free_port()
    done = jaxport_cli("serve", paths[kind], "--http-port", str(port), "--grpc-port", str(free_port()))
    assert done.returncode == 2, done.stderr
    assert f"jaxport serve: ArtifactError: {paths[kind]} is " in done.stderr
    assert "listening" not in done.stderr + done.stdout
