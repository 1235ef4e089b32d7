"""Ray Data: a Parquet file scored by a bundle (on JAX) and by its ONNX directory with ``map_batches``
(``jaxport.ray_data_map``: one or two actors, each loading the directory once), written back to Parquet;
results equal to ``load_converted(...)(...)``, a bad row failing the job with its index."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import jaxport
from tests.helpers import engine_models as model

ROWS = 40


def write_rows(path: Path, x: Any) -> Path:
    """``x``'s rows as a Parquet file with an ``id`` column and a list column ``arg0``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": np.arange(len(x)), "arg0": [row.tolist() for row in x]}), path)
    return path


@pytest.mark.parametrize(("name", "actors"), [("onnx", 2), ("bundle", 1)])
def test_parquet_in_parquet_out_gives_the_directorys_results(local_ray: None, directories: Path, tmp_path: Path,
                                                              name: str, actors: int) -> None:
    import ray.data

    x = model.rows(ROWS)
    source = write_rows(tmp_path / "rows.parquet", x)
    dataset = ray.data.read_parquet(str(source)).map_batches(
        lambda b: {"id": b["id"], "arg0": np.stack(list(b["arg0"])).astype(np.float32)}, batch_format="numpy")
    scored = jaxport.ray_data_map(dataset, directories / name, concurrency=actors, batch_size=16, num_cpus=0.5)
    scored.write_parquet(str(tmp_path / "scored"))
    back = ray.data.read_parquet(str(tmp_path / "scored")).sort("id").take_all()
    assert [row["id"] for row in back] == list(range(ROWS))
    y = np.stack([row["y"] for row in back])
    want = model.expected(x) if name == "bundle" else jaxport.load_converted(directories / name)["predict"](x)
    np.testing.assert_allclose(y, want["y"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.array([row["norm"] for row in back]), want["norm"], rtol=1e-5)


def test_a_bad_row_fails_the_job_with_its_index(local_ray: None, directories: Path) -> None:
    import ray.data
    import ray.exceptions

    rows = [{"arg0": r} for r in model.rows(4)]
    rows[2] = {"arg0": model.rows(1)[0][:3]}
    dataset = ray.data.from_items(rows)
    scored = jaxport.ray_data_map(dataset, directories / "onnx", batch_size=4, num_cpus=0.5)
    # Ray Data's own error: the job's task error, whose text holds the actor's traceback.
    with pytest.raises(ray.exceptions.RayTaskError, match=r"jaxport\.errors\.BatchRowError: Row 2 of the batch to "
                       r"'predict' is refused: Shape mismatch for args\[0\]\.shape\[1\]"):
        scored.take_all()


def test_actors_that_find_no_cpu_left_are_said_within_the_bound(local_ray: None, directories: Path,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    import ray.data
    import ray.exceptions

    dataset = ray.data.from_items([{"arg0": r} for r in model.rows(4)])
    with caplog.at_level("WARNING", logger="jaxport.ray_data"):  # an actor of 3 CPUs on a cluster of 2
        scored = jaxport.ray_data_map(dataset, directories / "onnx", batch_size=4, num_cpus=3, start_timeout_s=3)
    assert re.search(r"the cluster has no CPU left for its actors: [\d.]+ of its 2 CPUs are free, 1 actor\(s\) "
                     r"of 3 CPU need 3", caplog.text), caplog.text
    with pytest.raises(ray.exceptions.GetTimeoutError, match="not have enough resources"):
        scored.take_all()


def test_with_an_error_column_a_bad_row_among_many_is_named_by_its_id_and_every_good_row_is_scored(
        local_ray: None, directories: Path) -> None:
    import ray.data

    x = model.rows(12)
    rows: list[dict[str, Any]] = [{"id": 100 + i, "arg0": x[i]} for i in range(12)]
    rows[5] = {"id": 105, "arg0": x[5][:3]}  # a shape the function refuses
    rows[9] = {"id": 109, "arg0": np.concatenate([x[9], x[9]])}  # another
    scored = jaxport.ray_data_map(ray.data.from_items(rows), directories / "onnx", batch_size=4, num_cpus=0.5,
                                  error_column="error", id_column="id")
    back = sorted(scored.take_all(), key=lambda row: row["id"])
    assert [row["id"] for row in back] == [100 + i for i in range(12)]
    want = jaxport.load_converted(directories / "onnx")["predict"](x)
    for i, row in enumerate(back):
        if i in (5, 9):
            assert row["error"].startswith(f"the row id={100 + i}: CallError: The example to 'predict' is refused: ")
            assert row["y"] is None and row["norm"] is None
            continue
        assert row["error"] == ""
        np.testing.assert_allclose(row["y"], want["y"][i], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(row["norm"], want["norm"][i], rtol=1e-5)
    assert "Shape mismatch" in back[5]["error"] and "Shape mismatch" in back[9]["error"]
