"""A seeded slice of the campaign on hostile converted directories, per target (:mod:`tests.fuzz.converted`).

One small MLP bundle is converted to each target with a golden example and
without any (module fixture); each hostile copy (a model file damaged and
re-sealed, or, with the example, the manifest made hostile) is loaded with
verification, as a user would, and called: every outcome is a jaxport error
or the original's answer (or, without golden examples, another answer:
verification cannot tell such a model from the original); none is an untyped
error or, with the example, a damaged file that runs wrongly, and this
process survives (a crash of the runtime happens in the verifying child). The
counts are bounded by the time a verifying child takes (TensorFlow's import: seconds).
"""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

import jaxport
from tests.fuzz.converted import golden, hostile, outcome, source_bundle

#: Hostile copies per target with the golden example (half of them re-sealed model files, which a
#: verifying child opens); half as many without it, all re-sealed model files.
COUNTS = {"onnx": 12, "litert": 12, "iree": 12, "savedmodel": 4}
SEED = 37


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, Path]:
    root = tmp_path_factory.mktemp("hostile-source")
    return {True: source_bundle(root / "bundle"), False: source_bundle(root / "bare", examples=False)}


@pytest.mark.parametrize("examples", [True, False], ids=["examples", "no-examples"])
@pytest.mark.parametrize("to", sorted(COUNTS))
def test_hostile_directories_are_refused_typed_or_answer_as_the_original(
        to: str, examples: bool, bundles: dict[bool, Path], tmp_path: Path) -> None:
    pytest.importorskip({"onnx": "onnxruntime", "litert": "ai_edge_litert", "iree": "iree.runtime",
                         "savedmodel": "tensorflow"}[to])
    source = tmp_path / to
    jaxport.convert(bundles[examples], source, to=to)
    inputs, reference = golden(source)
    count = COUNTS[to] if examples else COUNTS[to] // 2
    counts: collections.Counter[str] = collections.Counter()
    bad = []
    for index in range(count):
        what = hostile(source, tmp_path / f"hostile-{index}", SEED, index, resealed_only=not examples)
        found = outcome(tmp_path / f"hostile-{index}", inputs, reference, verify=True, examples=examples)
        counts[found] += 1
        if found not in ("refused", "same", "changed"):
            bad.append(f"{index} ({what}): {found}")
    print(f"{to} examples={examples}: {dict(counts)}")
    assert not bad, (dict(counts), bad)
    assert counts["refused"] >= count // 2, dict(counts)
