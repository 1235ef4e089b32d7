"""Seeded slices of the generative campaigns (:mod:`tests.fuzz.generative`, :mod:`tests.fuzz.hostile_clients`).

Hostile copies of a generative bundle (specs, tokenizers, templates, damage) go through ``load_generator``,
``generate``, ``chat`` and ``jaxport check`` in this process: each is refused with a jaxport error or works,
none takes longer than the bound, none raises an untyped error, and what a load refuses ``check`` refuses
too. Hostile requests to one ``jaxport serve`` of the bundle leave it healthy, answering, and within 10% of
its memory. ``make fuzz-generative`` runs the long campaigns, the ONNX conversion and ``serve`` too.
"""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

from tests.fuzz.generative import hostile, outcome, source_directories
from tests.fuzz.hostile_clients import client_campaign

pytest.importorskip("tokenizers", reason="needs the extra jaxport[text]")
pytest.importorskip("jinja2", reason="needs the extra jaxport[text]")
pytest.importorskip("kserve", reason="the clients' slice serves: the extra jaxport[serve]")

COUNT = 24
SEED = 11


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return source_directories(tmp_path_factory.mktemp("generative-source"), onnx=False)[0]


def test_hostile_generative_bundles_are_refused_typed_or_work(bundle: Path, tmp_path: Path) -> None:
    counts: collections.Counter[str] = collections.Counter()
    bad = []
    for index in range(COUNT):
        what = hostile(bundle, tmp_path / f"hostile-{index}", SEED, index)
        found = outcome(tmp_path / f"hostile-{index}")
        counts[found] += 1
        if found not in ("ok", "refused"):
            bad.append(f"{index} ({what}): {found}")
    print(dict(counts))
    assert not bad, (dict(counts), bad)
    assert counts["refused"] >= COUNT // 2, dict(counts)


def test_hostile_clients_leave_the_server_healthy_answering_and_within_its_memory(bundle: Path,
                                                                                 tmp_path: Path) -> None:
    report = client_campaign(bundle, tmp_path, 40, SEED)
    print(report)
    assert report.ok, str(report)
    assert sum(report.outcomes.values()) == 40
