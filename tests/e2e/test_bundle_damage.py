"""Damaged bundles: each raises ArtifactError naming the file and the key; nothing loads in part."""

from __future__ import annotations

import hashlib
import json
import shutil
import struct
from collections.abc import Callable
from pathlib import Path

import pytest

import jaxport
from jaxport.domain.bundle.manifest import FORMAT_VERSION
from jaxport.errors import ArtifactError
from tests.helpers import bundle_model as model


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return model.save(tmp_path_factory.mktemp("bundle") / "model")


def edit_manifest(path: Path, edit: Callable[[dict[str, object]], None]) -> None:
    doc = json.loads((path / "manifest.json").read_text())
    edit(doc)
    (path / "manifest.json").write_text(json.dumps(doc))


def rewrite_file(path: Path, name: str, data: bytes) -> None:
    """Replaces a file and records its new size and digest, as a careless tool would."""
    (path / name).write_bytes(data)

    def update(doc: dict[str, object]) -> None:
        doc["files"][name] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}  # type: ignore[index]

    edit_manifest(path, update)


def rewrite_header(path: Path, weight: str, **changes: object) -> None:
    data = (path / "params.safetensors").read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    header[weight].update(changes)
    text = json.dumps(header, separators=(",", ":")).encode().ljust(length)
    assert len(text) == length
    rewrite_file(path, "params.safetensors", data[:8] + text + data[8 + length:])


def flip_last_byte(path: Path, name: str) -> None:
    data = bytearray((path / name).read_bytes())
    data[-1] ^= 0xFF
    (path / name).write_bytes(bytes(data))


DAMAGE: dict[str, tuple[Callable[[Path], object], str]] = {
    "missing function file": (lambda p: (p / "loss.jaxport").unlink(), "file loss.jaxport is missing"),
    "missing weights": (lambda p: (p / "params.safetensors").unlink(), "file params.safetensors is missing"),
    "missing manifest": (lambda p: (p / "manifest.json").unlink(), "its file manifest.json is missing"),
    "extra file": (lambda p: (p / "notes.txt").write_text("hi"), "manifest does not list: notes.txt"),
    "extra directory": (lambda p: (p / "sub").mkdir(), "The bundle holds sub, which is not a regular file"),
    "truncated weights": (
        lambda p: (p / "params.safetensors").write_bytes((p / "params.safetensors").read_bytes()[:-5]),
        "params.safetensors is truncated"),
    "truncated function": (
        lambda p: (p / "predict.jaxport").write_bytes((p / "predict.jaxport").read_bytes()[:100]),
        "predict.jaxport is truncated: 100 bytes"),
    "longer function": (
        lambda p: (p / "predict.jaxport").write_bytes((p / "predict.jaxport").read_bytes() + b"x"),
        "predict.jaxport is longer than recorded"),
    "changed function": (lambda p: flip_last_byte(p, "loss.jaxport"),
                         "digest of the bundle's file loss.jaxport does not match"),
    "changed weights": (lambda p: flip_last_byte(p, "params.safetensors"),
                        "params.safetensors: the digest of the weight 'rng' does not match its manifest"),
    "changed weights header": (lambda p: rewrite_file(p, "params.safetensors", (p / "params.safetensors").read_bytes()
                                                      .replace(b'"jaxport-bundle"', b'"jaxport-bundlX"')),
                               "params.safetensors: the digest of its header does not match"),
    "weight of another dtype": (lambda p: rewrite_header(p, "offset", dtype="U8"),
                                "params.safetensors: the weight 'offset' has dtype U8 where the manifest records I8"),
    "weight of another shape": (lambda p: rewrite_header(p, "dense/w", shape=[3, 4]),
                                r"the weight 'dense/w' has shape \(3, 4\) where the manifest records \(4, 3\)"),
    "weight outside the data": (lambda p: rewrite_header(p, "mask", data_offsets=[0, 3 << 20]),
                                "the bytes of the weight 'mask'"),
    "manifest shape differs": (
        lambda p: edit_manifest(p, lambda d: d["params"]["leaves"][1].update(shape=[1, 3])),  # type: ignore[index]
        r"functions do not match its manifest: .*function 'predict'.* at 'dense/b'"),
    "function swapped": (
        lambda p: rewrite_file(p, "predict.jaxport", (p / "init.jaxport").read_bytes()),
        "functions do not match its manifest: .*function 'predict'"),
    "function file not an artifact": (
        lambda p: rewrite_file(p, "loss.jaxport", b"\x00" * 64), "loss.jaxport: "),
    "newer format": (lambda p: edit_manifest(p, lambda d: d.update(format_version=FORMAT_VERSION + 1)),
                     f"format version {FORMAT_VERSION + 1}, newer than the newest this jaxport reads"),
    "manifest not json": (lambda p: (p / "manifest.json").write_text("{"), "manifest.json is not valid JSON"),
}


@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_a_damaged_bundle_raises_artifact_error_naming_file_and_key(saved: Path, tmp_path: Path, case: str) -> None:
    damage, message = DAMAGE[case]
    path = Path(shutil.copytree(saved, tmp_path / "model"))
    damage(path)
    with pytest.raises(ArtifactError, match=message):
        jaxport.load_bundle(path)


@pytest.mark.parametrize("case", ["missing function file", "extra file", "changed function", "newer format",
                                  "truncated weights"])
def test_inspect_of_a_damaged_bundle_raises_too(saved: Path, tmp_path: Path, case: str) -> None:
    damage, message = DAMAGE[case]
    path = Path(shutil.copytree(saved, tmp_path / "model"))
    damage(path)
    with pytest.raises(ArtifactError, match=message):
        jaxport.inspect(path)
