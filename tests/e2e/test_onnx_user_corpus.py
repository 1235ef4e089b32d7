"""The user corpus (``tests/helpers/onnx_user_corpus*.py``) converted to ONNX and run against ``jax.jit``.

Each function either matches JAX or is refused with jaxport's typed error
naming the operation: never a wrong result, never another error. ``make
test`` checks one slice of the corpus, rotating with the day (the slice is
in each test's id; ``JAXPORT_ONNX_CORPUS_SLICE=k/n`` chooses one, to
reproduce a failure); ``make corpus`` (``JAXPORT_ONNX_CORPUS=all``) checks
the whole corpus in one test and prints the counts: matched, refused by
operation, wrong, untyped.
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path

import pytest

pytest.importorskip("onnx", reason="the ONNX tests need the jaxport[onnx] extra (onnx)")
pytest.importorskip("onnxruntime", reason="the ONNX tests need the jaxport[onnx] extra (onnxruntime)")

from tests.helpers import (  # noqa: E402
    onnx_user_corpus_arrays, onnx_user_corpus_edges, onnx_user_corpus_elementwise, onnx_user_corpus_lax,
    onnx_user_corpus_linalg, onnx_user_corpus_nn)
from tests.helpers.onnx_corpus import Case  # noqa: E402
from tests.helpers.onnx_user_corpus import (  # noqa: E402
    SLICE_VARIABLE, SLICES, Tally, chosen_slice, classify, slice_of)

#: The environment variable that runs the whole corpus (``make corpus``).
WHOLE_VARIABLE = "JAXPORT_ONNX_CORPUS"
CORPUS: list[Case] = [*onnx_user_corpus_elementwise.CASES, *onnx_user_corpus_arrays.CASES,
                      *onnx_user_corpus_lax.CASES, *onnx_user_corpus_nn.CASES, *onnx_user_corpus_linalg.CASES,
                      *onnx_user_corpus_edges.CASES]
K, N = chosen_slice()
SLICE = slice_of(CORPUS, K, N)


def test_the_corpus_holds_250_functions_of_distinct_names() -> None:
    assert len(CORPUS) >= 250
    assert len({c.name for c in CORPUS}) == len(CORPUS)


def test_the_slices_cover_the_corpus_and_the_day_chooses_one() -> None:
    assert sorted(c.name for k in range(SLICES) for c in slice_of(CORPUS, k, SLICES)) == sorted(
        c.name for c in CORPUS)
    days = {chosen_slice({}, datetime.date(2026, 1, 1) + datetime.timedelta(days=d)) for d in range(SLICES)}
    assert days == {(k, SLICES) for k in range(SLICES)}
    assert chosen_slice({SLICE_VARIABLE: "3/5"}) == (3, 5)
    for bad in ("5/5", "x", "1/", "-1/3"):
        with pytest.raises(ValueError, match=SLICE_VARIABLE):
            chosen_slice({SLICE_VARIABLE: bad})


@pytest.mark.parametrize("case", SLICE, ids=[f"slice {K}/{N}: {c.name}" for c in SLICE])
def test_a_function_of_the_slice_matches_jax_or_is_refused_by_name(case: Case, tmp_path: Path) -> None:
    outcome = classify(case, tmp_path)
    assert outcome.kind in ("matched", "refused"), (
        f"{outcome.kind}: {outcome.detail}\n(reproduce with {SLICE_VARIABLE}={K}/{N})")


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get(WHOLE_VARIABLE) != "all",
                    reason=f"the whole corpus runs with {WHOLE_VARIABLE}=all (make corpus)")
def test_the_whole_corpus_matches_jax_or_is_refused_by_name(tmp_path: Path) -> None:
    tally = Tally()
    for i, case in enumerate(CORPUS):
        directory = tmp_path / str(i)
        directory.mkdir()
        tally.outcomes.append(classify(case, directory))
    print("\n" + tally.report())
    assert tally.failures() == [], tally.report()
