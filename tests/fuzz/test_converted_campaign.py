"""A seeded slice of the campaign on hostile converted directories, per target (:mod:`tests.fuzz.converted`).

One small MLP bundle with a golden example is converted to each target
(module fixture); each hostile copy (a model file damaged and re-sealed, or
the manifest made hostile) is loaded with verification, as a user would,
and called: every outcome is a jaxport error or the original's answer; none
is an untyped error or a damaged file that runs wrongly, and this process
survives (a crash of the runtime happens in the verifying child). The counts
are bounded by the time a verifying child takes (TensorFlow's import: seconds).
"""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

import jaxport
from tests.fuzz.converted import golden, hostile, outcome, source_bundle

#: Hostile copies per target (half of them re-sealed model files, which a verifying child opens).
COUNTS = {"onnx": 12, "litert": 12, "iree": 12, "savedmodel": 4}
SEED = 37


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return source_bundle(tmp_path_factory.mktemp("hostile-source") / "bundle")


@pytest.mark.parametrize("to", sorted(COUNTS))
def test_hostile_directories_are_refused_typed_or_answer_as_the_original(to: str, bundle: Path,
                                                                         tmp_path: Path) -> None:
    pytest.importorskip({"onnx": "onnxruntime", "litert": "ai_edge_litert", "iree": "iree.runtime",
                         "savedmodel": "tensorflow"}[to])
    source = tmp_path / to
    jaxport.convert(bundle, source, to=to)
    inputs, reference = golden(source)
    counts: collections.Counter[str] = collections.Counter()
    bad = []
    for index in range(COUNTS[to]):
        what = hostile(source, tmp_path / f"hostile-{index}", SEED, index)
        found = outcome(tmp_path / f"hostile-{index}", inputs, reference, verify=True)
        counts[found] += 1
        if found not in ("refused", "same"):
            bad.append(f"{index} ({what}): {found}")
    print(f"{to}: {dict(counts)}")
    assert not bad, (dict(counts), bad)
    assert counts["refused"] >= COUNTS[to] // 2, dict(counts)
