"""Bundles: saving and loading a model's weights, next to safetensors and np.savez of the same arrays.

Groups (kind ``"bundle"``, roles ``jaxport``, ``safetensors``, ``npz``):

* ``bundle save``: ``jaxport.save_bundle`` (one function and the weights,
  atomic, with digests) against ``safetensors.numpy.save_file`` and
  ``np.savez`` of the same arrays;
* ``bundle load``: ``jaxport.load_bundle`` (every digest checked, the weights
  as JAX arrays) against ``safetensors.numpy.load_file`` and
  ``dict(np.load(...))`` (NumPy arrays). Each load also runs once in a fresh
  process that records the peak resident memory the load added
  (``peak_bytes``; the peak is reset just before, so imports do not count).

The weights are 16 float32 arrays; their total size is
``JAXPORT_BENCH_BUNDLE_MIB`` MiB (64 by default; 1024 takes minutes and
3 GiB of disk). The files are in the page cache (written just before), as
when a server restarts. The report shows the load time over safetensors' and
the peak memory over the weights' size, each against the goal of at most 1.2x.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from pytest_benchmark.fixture import BenchmarkFixture
from safetensors.numpy import load_file, save_file

import jaxport


ARRAYS = 16
MIB = int(os.environ.get("JAXPORT_BENCH_BUNDLE_MIB", "64"))
ROLES = ("jaxport", "safetensors", "npz")
ROUNDS = 5


@dataclass(frozen=True)
class Weights:
    """The arrays, the function that takes them, and where each role keeps its files."""

    arrays: dict[str, np.ndarray]
    function: jaxport.Exported
    root: Path

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.arrays.values())

    def path(self, role: str) -> Path:
        return self.root / {"jaxport": "model", "safetensors": "w.safetensors", "npz": "w.npz"}[role]


@pytest.fixture(scope="module")
def weights(tmp_path_factory: pytest.TempPathFactory) -> Weights:
    rng = np.random.default_rng(0)
    rows = MIB * (1 << 20) // (ARRAYS * 4 * 1024)
    arrays = {f"layer{i:02d}": rng.random((rows, 1024), dtype=np.float32) for i in range(ARRAYS)}
    specs = {k: jax.ShapeDtypeStruct(a.shape, a.dtype) for k, a in arrays.items()}
    fun = jaxport.export(jax.jit(lambda p, x: x + sum(jnp.sum(w[0]) for w in p.values())))(
        specs, jax.ShapeDtypeStruct((4,), jnp.float32))
    return Weights(arrays, fun, tmp_path_factory.mktemp("bundle-bench"))


def save(weights: Weights, role: str) -> None:
    path = weights.path(role)
    if role == "jaxport":
        jaxport.save_bundle(path, {"f": weights.function}, weights.arrays)
    elif role == "safetensors":
        save_file(weights.arrays, path)
    else:
        savez: Any = np.savez
        savez(path, **weights.arrays)


def load(path: Path, role: str) -> Any:
    if role == "jaxport":
        return jax.block_until_ready(jaxport.load_bundle(path).params)
    if role == "safetensors":
        return load_file(path)
    with np.load(path) as f:
        return {k: f[k] for k in f.files}


PEAK_PROBE = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from benchmarks.test_bundles import load
import jax, jaxport, numpy, safetensors.numpy
jax.devices()
def rss(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1]) * 1024
open("/proc/self/clear_refs", "w").write("5")
before = rss("VmRSS:")
result = load(Path(sys.argv[1]), sys.argv[2])
print(rss("VmHWM:") - before)
"""


def peak_bytes(path: Path, role: str) -> int | None:
    """The peak resident memory a load adds in a fresh process (Linux), or None."""
    if not sys.platform.startswith("linux"):
        return None
    root = str(Path(__file__).resolve().parents[1])
    done = subprocess.run([sys.executable, "-c", PEAK_PROBE, str(path), role, root],
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return int(done.stdout.split()[-1])


def label(benchmark: BenchmarkFixture, group: str, role: str, **extra: object) -> None:
    """Like conftest's ``label``, with this file's roles (jaxport and two weights-file libraries)."""
    benchmark.group = group
    benchmark.extra_info.update(kind="bundle", role=role, baseline="-", **extra)


@pytest.mark.parametrize("role", ROLES)
def test_save(benchmark: BenchmarkFixture, weights: Weights, role: str) -> None:
    label(benchmark, f"bundle save ({ARRAYS} x {MIB // ARRAYS} MiB)", role, weights_bytes=weights.nbytes)
    benchmark.pedantic(lambda: save(weights, role), rounds=ROUNDS, iterations=1, warmup_rounds=1)


@pytest.mark.parametrize("role", ROLES)
def test_load(benchmark: BenchmarkFixture, weights: Weights, role: str) -> None:
    path = weights.path(role)
    if not path.exists():
        save(weights, role)
    extra: dict[str, Any] = {"weights_bytes": weights.nbytes, "peak_bytes": peak_bytes(path, role)}
    if role == "jaxport":
        files = json.loads((path / "manifest.json").read_text())["files"]
        extra["function_bytes"] = sum(d["size"] for name, d in files.items() if name.endswith(".jaxport"))
    label(benchmark, f"bundle load ({ARRAYS} x {MIB // ARRAYS} MiB)", role, **extra)
    benchmark.pedantic(lambda: load(path, role), rounds=ROUNDS, iterations=1, warmup_rounds=1)
