"""Ray Data: a data set scored by a callable class that each actor builds once (``Dataset.map_batches``)."""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Any

import ray
import ray.data  # noqa: F401 - a missing extra is said when the data set is mapped, not on an actor's first batch

logger = logging.getLogger("jaxport.ray_data")


def map_with(dataset: Any, predictor: type, constructor_kwargs: Mapping[str, Any], *, concurrency: int | tuple[int, int],
             batch_size: int | None, num_cpus: float | None, start_timeout_s: float) -> Any:
    """``dataset`` mapped by ``predictor(**constructor_kwargs)`` on ``concurrency`` actors, NumPy batches of
    ``batch_size`` rows (Ray's default where None), each actor holding ``num_cpus`` CPUs (Ray's default where
    None). Lazy, as Ray Data is: nothing runs until the data set is consumed; then, where the actors cannot
    start within ``start_timeout_s`` (the cluster has no CPU left for them), the consuming call fails with
    Ray's ``GetTimeoutError`` rather than waiting forever, and a cluster with too few free CPUs now is said
    at once (a warning naming the CPUs free and needed)."""
    options: dict[str, Any] = {"fn_constructor_kwargs": dict(constructor_kwargs), "batch_format": "numpy",
                               "concurrency": concurrency}
    if batch_size is not None:
        options["batch_size"] = batch_size
    if num_cpus is not None:
        options["num_cpus"] = num_cpus
    mapped = dataset.map_batches(predictor, **options)
    if mapped.context.wait_for_min_actors_s <= 0:  # Ray's default (-1): wait forever for the actors
        mapped.context.wait_for_min_actors_s = max(1, math.ceil(start_timeout_s))
    _say_free_cpus(concurrency, num_cpus, mapped.context.wait_for_min_actors_s)
    return mapped


def _say_free_cpus(concurrency: int | tuple[int, int], num_cpus: float | None, timeout: float) -> None:
    if not ray.is_initialized():
        return  # the data set starts the cluster when it runs
    actors = concurrency if isinstance(concurrency, int) else concurrency[0]
    needed = actors * (1.0 if num_cpus is None else num_cpus)
    free = float(ray.available_resources().get("CPU", 0.0))
    if free < needed:
        total = float(ray.cluster_resources().get("CPU", 0.0))
        logger.warning("ray_data_map: the cluster has no CPU left for its actors: %g of its %g CPUs are free, "
                       "%d actor(s) of %g CPU need %g (another application, a Ray Serve app say, holds the rest); "
                       "the data set fails if they cannot start within %g s: free CPUs, or pass a smaller "
                       "num_cpus or concurrency", free, total, actors, 1.0 if num_cpus is None else num_cpus,
                       needed, timeout)
