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


def only(value: Any) -> Any:
    """A matcher: every element equals ``value`` (how many depends on how Beam batched them)."""
    from apache_beam.testing.util import BeamAssertException

    def check(actual: list[Any]) -> None:
        if any(a != value for a in actual):
            raise BeamAssertException(f"{actual}: not all {value}")

    return check


@pytest.mark.parametrize("name", ["onnx", "bundle"])
def test_run_inference_gives_the_directorys_results(directories: Path, name: str) -> None:
    import apache_beam as beam
    from apache_beam.ml.inference.base import KeyedModelHandler, RunInference
    from apache_beam.testing.util import assert_that

    x = model.rows(ROWS)
    want = model.expected(x) if name == "bundle" else jaxport.load_converted(directories / name)["predict"](x)
    handler = KeyedModelHandler(jaxport.beam_model_handler(directories / name, max_batch_size=3))
    with pipeline() as p:
        results = (p | beam.Create([(i, {"arg0": x[i]}) for i in range(ROWS)]) | RunInference(handler))
        assert_that(results, close_to({i: {k: v[i] for k, v in want.items()} for i in range(ROWS)}))
    assert not os.path.exists(os.path.join(os.environ["HOME"], ".apache_beam"))


def test_a_bad_row_goes_to_the_dead_letter_output_with_its_index(directories: Path) -> None:
    import apache_beam as beam
    from apache_beam.ml.inference.base import RunInference
    from apache_beam.testing.util import assert_that, equal_to

    rows = [{"arg0": r} for r in model.rows(3)]
    rows[1] = {"arg0": model.rows(1)[0][:3]}
    handler = jaxport.beam_model_handler(directories / "onnx", max_batch_size=3)
    with pipeline() as p:
        main, other = (p | beam.Create([rows]) | beam.FlatMap(lambda batch: batch)
                       | RunInference(handler).with_exception_handling())
        # Beam's dead letter: (the failed batch, (the error's type, its repr, the traceback's lines)); the
        # message names the bad row's index in that batch.
        errors = other.failed_inferences | beam.Map(lambda failed: (
            failed[1][0].__name__,
            f"Row {[e['arg0'].shape for e in failed[0]].index((3,))} of the batch to " in failed[1][1]
            and "is refused: Shape mismatch for args[0].shape[1]" in failed[1][1]))
        assert_that(errors, equal_to([("BatchRowError", True)]), label="the bad row")
        assert_that(main | beam.Map(lambda r: r.example["arg0"].shape), only((4,)), label="good rows only")
