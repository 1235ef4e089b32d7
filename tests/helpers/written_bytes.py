"""A fixed set of every kind of file jaxport writes, for tests/e2e/test_written_bytes.py.

``python -m tests.helpers.written_bytes OUTDIR [PART ...]``, run from the
repository's root, writes one folder per part into ``OUTDIR`` and the versions
that made them into ``OUTDIR/versions.json``:

- ``artifacts``: ``static.jaxport`` (a function of a (2, 4) array) and
  ``symbolic.jaxport`` (of a (b, 4) array), by :func:`jaxport.save`;
- ``bundle``: a 4x8x3 MLP's ``predict`` (any batch) and ``loss``, with VJPs,
  fixed weights and golden examples, by :func:`jaxport.save_bundle`;
- ``onnx``, ``onnx_web``, ``litert``, ``iree``, ``savedmodel``: that bundle
  converted to each target.

Without parts it writes them all. ``python -m tests.helpers.written_bytes
--record`` writes them all in a child process and records them as the test's
data, :data:`DATA`: ``versions.json``, ``digests.json`` (every file's size and
SHA-256 after :func:`normalized`) and the normalized text of every
``manifest.json`` under ``manifests/``, which a failing test diffs. A change
that means to alter what jaxport writes (or this file: its line numbers are in
the modules' locations) records the data again, in a commit of its own that
says why.

The weights and inputs are small multiples of powers of two and the model
has no transcendental function, so the golden outputs are exact on any CPU.
The files are always written in a child process (:func:`generate`):
JAX 0.12 records the Python call stack of a lowering in the module's
locations, so the bytes depend on every frame above the export.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

#: The repository's root, which the modules' locations leave out (see :func:`main`).
ROOT = Path(__file__).resolve().parents[2]
#: The committed data that tests/e2e/test_written_bytes.py compares with.
DATA = ROOT / "tests" / "data" / "written_bytes"
#: The parts in the order they are written (every target converts the bundle).
PARTS = ("artifacts", "bundle", "onnx", "onnx_web", "litert", "iree", "savedmodel")
#: The software whose version a part's bytes depend on, besides jaxport (whose version jaxport writes):
#: Python (its runpy frames are in the modules' locations), JAX and jaxlib (the modules, the golden
#: outputs, the versions written), and the target's converter.
PART_SOFTWARE: Mapping[str, tuple[str, ...]] = {
    "artifacts": ("python", "jax", "jaxlib"),
    "bundle": ("python", "jax", "jaxlib"),
    "onnx": ("python", "jax", "jaxlib", "onnx"),
    "onnx_web": ("python", "jax", "jaxlib", "onnx"),
    "litert": ("python", "jax", "jaxlib", "litert-converter"),
    "iree": ("python", "jax", "jaxlib", "iree-base-compiler"),
    "savedmodel": ("python", "jax", "jaxlib", "tensorflow"),
}
#: The files whose bytes vary from one run to the next, and why; :func:`normalized` fixes exactly that.
VARYING = {
    "savedmodel/fingerprint.pb": "TensorFlow writes a random uuid (FingerprintDef field 7) in every "
                                 "SavedModel's fingerprint: replaced by a fixed one",
    "savedmodel/assets.extra/jaxport/manifest.json": "lists fingerprint.pb's size and SHA-256, which the uuid "
                                                     "changes: checked against the file, then replaced by the "
                                                     "normalized file's",
}
_FINGERPRINT, _SAVEDMODEL_MANIFEST = VARYING
_UUID_FIELD = 7
_FIXED_UUID = b"normalized-uuid"
_CHILD_ENV = {"TF_CPP_MIN_LOG_LEVEL": "2"}


# The model (the functions' line numbers are in the modules' locations).

def params() -> dict[str, Any]:
    """The MLP's weights: fixed multiples of 1/16."""
    import numpy as np

    return {"dense1": {"w": ((np.arange(32, dtype=np.float32) - 16) / 16).reshape(4, 8),
                       "b": (np.arange(8, dtype=np.float32) - 4) / 8},
            "dense2": {"w": ((12 - np.arange(24, dtype=np.float32)) / 16).reshape(8, 3),
                       "b": np.asarray([0.25, 0.0, -0.25], np.float32)}}


def predict(p: dict[str, Any], x: Any) -> Any:
    import jax

    h = jax.nn.relu(x @ p["dense1"]["w"] + p["dense1"]["b"])
    return h @ p["dense2"]["w"] + p["dense2"]["b"]


def loss(p: dict[str, Any], x: Any, y: Any) -> Any:
    import jax.numpy as jnp

    return jnp.mean((predict(p, x) - y) ** 2)


def scaled_sum(x: Any) -> dict[str, Any]:
    import jax.numpy as jnp

    return {"sum": jnp.sum(x, axis=0), "tanh": jnp.tanh(2.0 * x)}


def inputs(batch: int) -> tuple[Any, Any]:
    import numpy as np

    x = ((np.arange(batch * 4, dtype=np.float32) - 2 * batch) / 8).reshape(batch, 4)
    y = (np.arange(batch * 3, dtype=np.float32) / 8).reshape(batch, 3)
    return x, y


def write_artifacts(out: Path) -> None:
    """A static and a symbolic artifact, as :func:`jaxport.save` writes them."""
    import jax
    import jax.numpy as jnp

    import jaxport

    out.mkdir()
    static = jaxport.export(jax.jit(scaled_sum))(jax.ShapeDtypeStruct((2, 4), jnp.float32))
    jaxport.save(static, out / "static.jaxport")
    b, = jaxport.symbolic_shape("b")
    symbolic = jaxport.export(jax.jit(scaled_sum))(jax.ShapeDtypeStruct((b, 4), jnp.float32))
    jaxport.save(symbolic, out / "symbolic.jaxport")


def write_bundle(path: Path) -> None:
    """The MLP's bundle: ``predict`` for any batch, ``loss``, VJPs of order 1, golden examples."""
    import jax
    import jax.numpy as jnp

    import jaxport

    b, = jaxport.symbolic_shape("b")
    specs = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), params())
    x = jax.ShapeDtypeStruct((b, 4), jnp.float32)
    y = jax.ShapeDtypeStruct((b, 3), jnp.float32)
    functions = {"predict": jaxport.export(jax.jit(predict))(specs, x),
                 "loss": jaxport.export(jax.jit(loss))(specs, x, y)}
    (x2, y2), (x3, _) = inputs(2), inputs(3)
    examples: dict[str, list[tuple[tuple[Any, ...], dict[str, Any]]]] = {
        "predict": [((x2,), {}), ((x3,), {})], "loss": [((x2, y2), {})]}
    jaxport.save_bundle(path, functions, params(), vjp_order=1, metadata={"model": "mlp 4x8x3"},
                        examples=examples)


def _converters(bundle: Path) -> Mapping[str, Callable[[Path], object]]:
    import jaxport

    dims = {"predict": [{"b": 2}], "loss": [{"b": 2}]}
    return {"onnx": lambda out: jaxport.to_onnx(bundle, out),
            "onnx_web": lambda out: jaxport.to_onnx(bundle, out, web=True),
            "litert": lambda out: jaxport.to_litert(bundle, out, dims={"loss": [{"b": 2}]}),
            # Not "host": the modules would depend on this machine's CPU.
            "iree": lambda out: jaxport.to_iree(bundle, out, dims=dims, target_cpu="generic",
                                                target_triple="x86_64-linux-gnu"),
            "savedmodel": lambda out: jaxport.to_savedmodel(bundle, out, default="predict")}


def write(root: Path, parts: tuple[str, ...] = PARTS) -> None:
    """Writes ``parts`` and ``versions.json`` into ``root``; the bundle, when only converted, in a
    folder of ``root`` that is removed at the end."""
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        raise ValueError(f"unknown parts {unknown}: the parts are {', '.join(PARTS)}")
    root.mkdir(parents=True, exist_ok=True)
    if "artifacts" in parts:
        write_artifacts(root / "artifacts")
    targets = [p for p in PARTS[2:] if p in parts]
    bundle = root / "bundle" if "bundle" in parts else root / ".bundle"
    if "bundle" in parts or targets:
        write_bundle(bundle)
    converters = _converters(bundle)
    for part in targets:
        converters[part](root / part)
    if bundle.name == ".bundle":
        shutil.rmtree(bundle, ignore_errors=True)
    (root / "versions.json").write_text(json.dumps(versions(parts), indent=1, sort_keys=True) + "\n")


def versions(parts: tuple[str, ...]) -> dict[str, str]:
    """jaxport's version and that of every software :data:`PART_SOFTWARE` names for ``parts``."""
    import jaxport

    found = {"jaxport": jaxport.__version__}
    for name in sorted({s for p in parts for s in PART_SOFTWARE[p]}):
        found[name] = _version(name)
    return found


def _version(name: str) -> str:
    if name == "python":  # the minor release: its runpy frames are in the modules' locations
        return ".".join(platform.python_version_tuple()[:2])
    for distribution in (name, f"{name}-cpu"):  # tensorflow-cpu installs the module tensorflow
        try:
            return importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            continue
    return "not installed"


# Generation in a child process, normalization, recording.

def generate(out: Path, parts: tuple[str, ...] = PARTS) -> None:
    """Runs ``python -m tests.helpers.written_bytes out *parts`` in a child process, from :data:`ROOT`.

    Raises:
        RuntimeError: the child failed (with the end of its stderr).
    """
    done = subprocess.run([sys.executable, "-m", "tests.helpers.written_bytes", str(out), *parts],
                          cwd=ROOT, env={**os.environ, **_CHILD_ENV}, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"writing {parts} failed ({done.returncode}):\n{done.stderr[-5000:]}")


def normalized(root: Path, part: str) -> dict[str, bytes]:
    """Every file of ``root/part`` by its path from ``root`` (``/``-separated), :data:`VARYING` normalized."""
    files = {p.relative_to(root).as_posix(): p.read_bytes()
             for p in sorted((root / part).rglob("*")) if p.is_file()}
    if _FINGERPRINT in files:
        fingerprint = _with_fixed_uuid(files[_FINGERPRINT])
        if _SAVEDMODEL_MANIFEST in files:
            files[_SAVEDMODEL_MANIFEST] = _with_digest_of(files[_SAVEDMODEL_MANIFEST], files[_FINGERPRINT],
                                                          fingerprint)
        files[_FINGERPRINT] = fingerprint
    return files


def digest(data: bytes) -> dict[str, Any]:
    """``{"size": ..., "sha256": ...}`` of ``data``, as in digests.json."""
    return {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def _with_fixed_uuid(fingerprint: bytes) -> bytes:
    """``fingerprint`` (a serialized ``FingerprintDef``) with :data:`_FIXED_UUID` as its uuid, the rest as is."""
    out, i, seen = bytearray(), 0, 0
    while i < len(fingerprint):
        tag, j = _varint(fingerprint, i)
        if tag & 7 == 0:
            _, end = _varint(fingerprint, j)
        elif tag & 7 == 2:
            size, start = _varint(fingerprint, j)
            end = start + size
            if tag >> 3 == _UUID_FIELD:
                out += fingerprint[i:j] + bytes([len(_FIXED_UUID)]) + _FIXED_UUID
                i, seen = end, seen + 1
                continue
        else:
            raise ValueError(f"{_FINGERPRINT}: unexpected wire type {tag & 7} at byte {i}")
        out += fingerprint[i:end]
        i = end
    if seen != 1:
        raise ValueError(f"{_FINGERPRINT}: {seen} uuid fields, expected 1")
    return bytes(out)


def _varint(data: bytes, i: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        byte = data[i]
        value |= (byte & 0x7F) << shift
        i, shift = i + 1, shift + 7
        if not byte & 0x80:
            return value, i


def _with_digest_of(manifest: bytes, fingerprint: bytes, normalized_fingerprint: bytes) -> bytes:
    """``manifest`` with ``normalized_fingerprint``'s size and SHA-256 in place of ``fingerprint``'s."""
    entry = re.compile(rb'("fingerprint\.pb": \{\s*"size": )(\d+)(,\s*"sha256": ")([0-9a-f]{64})(")')
    found = entry.findall(manifest)
    actual = digest(fingerprint)
    if [(int(m[1]), m[3].decode()) for m in found] != [(actual["size"], actual["sha256"])]:
        raise ValueError(f"{_SAVEDMODEL_MANIFEST}: fingerprint.pb's entry {found} is not the file's {actual}")
    fixed = digest(normalized_fingerprint)
    return entry.sub(lambda m: m[1] + str(fixed["size"]).encode() + m[3] + fixed["sha256"].encode() + m[5],
                     manifest)


def record(data: Path = DATA) -> None:
    """Writes every part in a child process and records them in ``data`` (replacing what is there)."""
    with tempfile.TemporaryDirectory(prefix="jaxport-written-bytes-") as tmp:
        out = Path(tmp) / "out"
        generate(out)
        shutil.rmtree(data, ignore_errors=True)
        (data / "manifests").mkdir(parents=True)
        shutil.copyfile(out / "versions.json", data / "versions.json")
        digests: dict[str, Any] = {}
        for part in PARTS:
            for name, content in normalized(out, part).items():
                digests[name] = digest(content)
                if Path(name).name == "manifest.json":
                    (data / "manifests" / name).parent.mkdir(parents=True, exist_ok=True)
                    (data / "manifests" / name).write_bytes(content)
        (data / "digests.json").write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n")


def main(argv: list[str]) -> int:
    """``OUTDIR [PART ...]`` writes the parts; ``--record [DATA]`` records the test's data."""
    if argv[:1] == ["--record"]:
        record(Path(argv[1]) if len(argv) > 1 else DATA)
        return 0
    if not argv or argv[0].startswith("-"):
        print(f"usage: python -m tests.helpers.written_bytes (OUTDIR [{' '.join(PARTS)}] | --record [DATA])",
              file=sys.stderr)
        return 2
    import jax

    # The modules' locations name this file by its path from the repository's root, not from
    # wherever the repository is checked out.
    jax.config.update("jax_hlo_source_file_canonicalization_regex", "^" + re.escape(f"{ROOT}{os.sep}"))
    write(Path(argv[0]), tuple(argv[1:]) or PARTS)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
