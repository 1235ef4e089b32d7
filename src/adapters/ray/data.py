"""Ray Data: a data set scored by a callable class that each actor builds once (``Dataset.map_batches``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import ray.data  # noqa: F401 - a missing extra is said when the data set is mapped, not on an actor's first batch


def map_with(dataset: Any, predictor: type, constructor_kwargs: Mapping[str, Any], *, concurrency: int | tuple[int, int],
             batch_size: int | None, num_cpus: float | None) -> Any:
    """``dataset`` mapped by ``predictor(**constructor_kwargs)`` on ``concurrency`` actors, NumPy batches of
    ``batch_size`` rows (Ray's default where None), each actor holding ``num_cpus`` CPUs (Ray's default where
    None). Lazy, as Ray Data is: nothing runs until the data set is consumed."""
    options: dict[str, Any] = {"fn_constructor_kwargs": dict(constructor_kwargs), "batch_format": "numpy",
                               "concurrency": concurrency}
    if batch_size is not None:
        options["batch_size"] = batch_size
    if num_cpus is not None:
        options["num_cpus"] = num_cpus
    return dataset.map_batches(predictor, **options)
