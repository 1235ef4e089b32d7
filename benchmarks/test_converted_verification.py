"""Verifying converted directories: a second load of a verified directory against ``verify=False``.

One group (kind ``"converted-verify"``) per target (ONNX, LiteRT, IREE), on a
directory converted from an MLP bundle of 4 layers of 512x512 float32
weights (4 MiB) with a golden example. In one run, alternating, each round
times ``jaxport.load_converted(path)`` (verified: the verdict remembered,
so it costs a digest of the manifest and a read of one small file) and
``jaxport.load_converted(path, verify=False)``; ``extra_info`` gives the
medians, their ratio (goal: at most 1.05) and, beside them, the first load's
verification (a fresh verdict folder: the verifying child opens every model
file and calls every variant), ``first_verified_s``.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from pytest_benchmark.fixture import BenchmarkFixture

import jaxport

ROUNDS = 15
WIDTH = 512
LAYERS = 4


def _mlp(params: list[jax.Array], x: jax.Array) -> jax.Array:
    for w in params:
        x = jnp.tanh(x @ w)
    return x


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("converted-verify") / "bundle"
    rng = np.random.default_rng(0)
    params = [jnp.asarray(rng.normal(size=(WIDTH, WIDTH)).astype(np.float32) / WIDTH ** 0.5)
              for _ in range(LAYERS)]
    x = rng.normal(size=(8, WIDTH)).astype(np.float32)
    exported = jaxport.export(jax.jit(_mlp))(params, jax.ShapeDtypeStruct((8, WIDTH), jnp.float32))
    jaxport.save_bundle(root, {"predict": exported}, params, examples={"predict": [((x,), {})]})
    return root


def _seconds(path: Path, verify: bool) -> float:
    start = time.perf_counter()
    jaxport.load_converted(path, verify=verify)
    return time.perf_counter() - start


@pytest.mark.parametrize("to", ["onnx", "litert", "iree"])
def test_a_second_load_of_a_verified_directory_against_verify_false(benchmark: BenchmarkFixture, bundle: Path,
                                                                    to: str, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip({"onnx": "onnxruntime", "litert": "ai_edge_litert", "iree": "iree.runtime"}[to])
    path = bundle.parent / to
    if not path.exists():
        jaxport.convert(bundle, path, to=to)
    with tempfile.TemporaryDirectory(prefix="jaxport-verdicts-") as verdicts:
        monkeypatch.setenv("JAXPORT_CACHE_DIR", verdicts)
        first = _seconds(path, True)
        _seconds(path, False)  # both warm
        verified: list[float] = []
        unverified: list[float] = []

        def round_() -> None:
            verified.append(_seconds(path, True))
            unverified.append(_seconds(path, False))
            if len(verified) % 2 == 0:  # alternate which comes first
                unverified.append(_seconds(path, False))
                verified.append(_seconds(path, True))

        benchmark.group = f"converted-verify: load_converted of a {to} directory (MLP 4x512, 4 MiB)"
        benchmark.pedantic(round_, rounds=ROUNDS, iterations=1, warmup_rounds=1)
    ratio = statistics.median(verified) / statistics.median(unverified)
    benchmark.extra_info.update(kind="converted-verify", target=to, first_verified_s=first,
                                second_verified_s=statistics.median(verified),
                                unverified_s=statistics.median(unverified), ratio=ratio, pid=os.getpid())
    print(f"\n{to}: first load (verifying child) {first:.3f} s; second load {statistics.median(verified) * 1e3:.2f} ms"
          f" vs verify=False {statistics.median(unverified) * 1e3:.2f} ms: ratio {ratio:.3f}")
