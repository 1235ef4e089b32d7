"""End to end: the batch interface that the engines call (``jaxport.load_batches``), on a bundle (JAX),
its ONNX directory (any size) and its IREE directory (compiled for b = 2 and 4 only).

Results are compared with the directory's own ``load_converted(...)(...)`` (the bundle's with NumPy's);
a batch of 7 rows on IREE runs split and padded onto the compiled sizes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import jaxport
from jaxport.errors import BatchRowError, CallError, ShapeMismatchError
from tests.helpers import engine_models as model


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("batches")
    model.make_onnx(root)
    jaxport.to_iree(root / "bundle", root / "iree", dims={"predict": [{"b": 2}, {"b": 4}]})
    return root


@pytest.mark.parametrize("directory", ["bundle", "onnx", "iree"])
def test_a_batch_of_any_size_gives_the_directorys_results_by_wire_name(root: Path, directory: str) -> None:
    predict = jaxport.load_batches(root / directory)["predict"]
    x = model.rows(7)
    got = predict({"arg0": x})
    assert sorted(got) == ["norm", "y"]
    if directory == "bundle":
        want = model.expected(x)
    else:
        called = jaxport.load_converted(root / directory)["predict"]
        want = called(x) if directory == "onnx" else {k: np.concatenate([called(x[:4])[k], called(x[4:6])[k],
                                                                        called(x[5:7])[k][1:]]) for k in got}
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-5)


def test_a_target_compiled_per_size_runs_split_and_padded(root: Path) -> None:
    predict = jaxport.load_batches(root / "iree")["predict"]
    assert predict.batch_sizes == (2, 4)
    for count in (1, 3, 9):
        x = model.rows(count, seed=count)
        got = predict({"arg0": x})
        assert got["y"].shape == (count, model.OUTPUTS)
        np.testing.assert_allclose(got["y"], model.expected(x)["y"], rtol=1e-5, atol=1e-5)


def test_max_rows_cuts_a_batch_into_several_calls_with_the_same_results(root: Path) -> None:
    x = model.rows(5)
    whole = jaxport.load_batches(root / "onnx")["predict"]({"arg0": x})
    cut = jaxport.load_batches(root / "onnx", max_rows=2)["predict"]({"arg0": x})
    np.testing.assert_array_equal(cut["y"], whole["y"])


def test_rows_give_one_result_per_row(root: Path) -> None:
    x = model.rows(3)
    results = jaxport.load_batches(root / "onnx")["predict"].rows([{"arg0": row} for row in x])
    assert [r["y"].shape for r in results] == [(model.OUTPUTS,)] * 3
    np.testing.assert_allclose(results[2]["norm"], model.expected(x)["norm"][2], rtol=1e-5)


def test_a_bad_row_is_refused_by_its_index(root: Path) -> None:
    predict = jaxport.load_batches(root / "onnx")["predict"]
    x = model.rows(3)
    with pytest.raises(BatchRowError, match=r"Row 1 of the batch to 'predict' is refused: Shape mismatch for "
                       r"args\[0\]\.shape\[1\]") as caught:
        predict.rows([{"arg0": x[0]}, {"arg0": x[1][:3]}, {"arg0": x[2]}])
    assert caught.value.row == 1
    with pytest.raises(BatchRowError, match=r"Row 0 .*missing input\(s\) \['arg0'\]"):
        predict.rows([{"x": x[0]}])
    ragged = np.empty(3, dtype=object)
    ragged[:] = [x[0], x[1], x[2].astype(np.float64)]
    with pytest.raises(BatchRowError, match=r"Row 2 .*Dtype mismatch for args\[0\]: expected float32 and "
                       r"called with float64"):
        predict({"arg0": ragged})


def test_a_bad_batch_is_refused_with_the_fronts_error(root: Path) -> None:
    predict = jaxport.load_batches(root / "onnx")["predict"]
    with pytest.raises(ShapeMismatchError, match=r"args\[0\]\.shape\[1\]"):
        predict({"arg0": model.rows(3)[:, :2]})
    with pytest.raises(CallError, match=r"unknown input\(s\) \['x'\]"):
        predict({"arg0": model.rows(3), "x": model.rows(3)})
    with pytest.raises(CallError, match=r"No function 'nope' in this directory; it has \['predict'\]"):
        jaxport.load_batches(root / "onnx")["nope"]


def test_a_converted_directory_runs_its_batches_and_loads_the_engines_glue_without_jax(root: Path) -> None:
    code = ("import sys, numpy as np, jaxport, jaxport.application.serving.engines; "
            f"out = jaxport.load_batches({str(root / 'onnx')!r})['predict']({{'arg0': np.zeros((2, 4), np.float32)}}); "
            "print(out['y'].shape, sorted(m for m in ('jax', 'jaxlib', 'kserve', 'ray', 'apache_beam') "
            "if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == "(2, 3) []"


def test_the_largest_compiled_batch_is_read_from_the_manifest(root: Path) -> None:
    from jaxport.application.serving.engines import largest_compiled_rows

    assert [largest_compiled_rows(root / d, "predict") for d in ("iree", "onnx", "bundle")] == [4, None, None]
