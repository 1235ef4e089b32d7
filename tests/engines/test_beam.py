"""Apache Beam: ``RunInference`` with jaxport's ``ModelHandler`` on a bundle (on JAX) and its ONNX directory,
with ``TestPipeline`` and ``assert_that`` on the DirectRunner's in-process engine (the FnApiRunner, pinned: 2.77's
DirectRunner tries Prism first, which downloads a binary and writes under ``~/.apache_beam``); HOME, a temporary
directory for the run (tests/engines/conftest.py), stays without ``.apache_beam``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import jaxport
from tests.helpers import engine_models as model

ROWS = 7


def pipeline() -> Any:
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner
    from apache_beam.testing.test_pipeline import TestPipeline

    return TestPipeline(runner=FnApiRunner())


def close_to(want: dict[int, dict[str, Any]]) -> Any:
    """A matcher of ``(row id, PredictionResult)`` pairs: each row's outputs equal ``want[id]``."""
    from apache_beam.testing.util import BeamAssertException

    def check(actual: list[tuple[int, Any]]) -> None:
        if sorted(i for i, _ in actual) != sorted(want):
            raise BeamAssertException(f"rows {sorted(i for i, _ in actual)}, expected {sorted(want)}")
        for i, result in actual:
            for name, value in want[i].items():
                np.testing.assert_allclose(result.inference[name], value, rtol=1e-5, atol=1e-6)

    return check


@pytest.mark.parametrize("name", ["onnx", "bundle"])
def test_run_inference_gives_the_directorys_results(directories: Path, name: str) -> None:
    import apache_beam as beam
    from apache_beam.ml.inference.base import RunInference
    from apache_beam.testing.util import assert_that

    x = model.rows(ROWS)
    want = model.expected(x) if name == "bundle" else jaxport.load_converted(directories / name)["predict"](x)
    handler = jaxport.beam_model_handler(directories / name, max_batch_size=3, keyed=True)
    with pipeline() as p:
        results = (p | beam.Create([(i, {"arg0": x[i]}) for i in range(ROWS)]) | RunInference(handler))
        assert_that(results, close_to({i: {k: v[i] for k, v in want.items()} for i in range(ROWS)}))
    assert not os.path.exists(os.path.join(os.environ["HOME"], ".apache_beam"))


def test_a_bad_row_among_ten_goes_alone_to_the_dead_letters_and_every_good_row_is_scored(directories: Path) -> None:
    import apache_beam as beam
    from apache_beam.ml.inference.base import RunInference
    from apache_beam.testing.util import assert_that, equal_to

    x = model.rows(10)
    rows: list[Any] = [(i, {"arg0": x[i]}) for i in range(10)]
    rows[6] = (6, {"arg0": x[6][:3]})  # a shape the function refuses
    want = jaxport.load_converted(directories / "onnx")["predict"](x)
    handler = jaxport.beam_model_handler(directories / "onnx", max_batch_size=4, keyed=True)
    with pipeline() as p:
        main, other = p | beam.Create(rows) | RunInference(handler).with_exception_handling()
        # Beam's per-record dead letter of the preprocess function: (the element, (the error's type, its repr,
        # the traceback's lines)).
        errors = other.failed_preprocessing[0] | beam.Map(lambda failed: (
            failed[0][0], failed[1][0].__name__, "The example to 'predict' is refused: Shape mismatch for "
            "args[0].shape[1]" in failed[1][1]))
        assert_that(errors, equal_to([(6, "CallError", True)]), label="the bad row alone")
        assert_that(other.failed_inferences, equal_to([]), label="no batch failed")
        good = {i: {k: v[i] for k, v in want.items()} for i in range(10) if i != 6}
        assert_that(main, close_to(good), label="every good row")
