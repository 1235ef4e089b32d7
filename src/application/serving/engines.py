"""jaxport's directories on the engines users already run: Ray Serve, Ray Data, Apache Beam.

Each engine drives the batch interface (:mod:`jaxport.application.serving.batches`):
the directory is loaded once per replica, actor or worker, by a loader that
pickles by reference (``functools.partial(load_batches, path)``), so the
engine ships only the path. Each engine is an optional extra (``ray``,
``beam``) imported only here, when used; a converted directory runs on it
without JAX.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from typing import Any

from jaxport.domain.errors import MissingExtraError, UsageError
from jaxport.domain.path_kind import PathKind
from jaxport.domain.serving.options import DEFAULT_MAX_BATCH_SIZE
from jaxport.application.conversion.api import open_directory
from jaxport.application.serving.batches import BatchPredictor, load_batches, shared_batches

#: How long a Ray Serve request waits for others to join its batch, unless told otherwise (seconds).
DEFAULT_BATCH_WAIT_TIMEOUT_S = 0.002


def ray_serve_app(path: str | os.PathLike[str], *, name: str = "jaxport", num_replicas: int | str | None = 1,
                  max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
                  batch_wait_timeout_s: float = DEFAULT_BATCH_WAIT_TIMEOUT_S,
                  autoscaling_config: Mapping[str, Any] | None = None,
                  ray_actor_options: Mapping[str, Any] | None = None,
                  max_ongoing_requests: int | None = None) -> Any:
    """The directory at ``path`` as a Ray Serve application: ``serve.run(app, route_prefix="/")`` starts it.

    Each replica loads the directory and runs its golden examples before Serve
    counts it ready; its functions answer over Serve's HTTP proxy with the Open
    Inference Protocol's JSON (``POST /v2/models/NAME/infer``, as ``jaxport
    serve``) and through the handle (``handle.infer.remote(NAME, {wire name:
    array})``). Concurrent requests to a function are joined by ``serve.batch``.

    Args:
        path: a bundle (its replicas need JAX) or a converted directory (its runtime only).
        name: the deployment's name.
        num_replicas: the replicas (Serve's ``num_replicas``; ``"auto"`` too); ignored with
            ``autoscaling_config``.
        max_batch_size: the most rows that one joined call holds (a larger request runs alone).
        batch_wait_timeout_s: how long the first waiting request waits for others.
        autoscaling_config: Serve's autoscaling settings, passed through.
        ray_actor_options: each replica's resources (``{"num_cpus": 1}``), passed through.
        max_ongoing_requests: Serve's limit of requests a replica holds at once.

    Raises:
        MissingExtraError: Ray Serve (``jaxport[ray]``) is not installed.
        ValueError: ``max_batch_size`` is below 1 or ``batch_wait_timeout_s`` below 0.
    """
    if max_batch_size < 1 or batch_wait_timeout_s < 0:
        raise ValueError(f"max_batch_size must be at least 1 and batch_wait_timeout_s at least 0, not "
                         f"{max_batch_size} and {batch_wait_timeout_s}")
    try:
        from jaxport.adapters.ray.serve_deployment import deployment_app
    except ImportError as exc:
        raise MissingExtraError("Ray Serve, which runs a directory's replicas on a Ray cluster,", "ray",
                                exc) from exc
    return deployment_app(functools.partial(load_batches, os.fspath(path)), name=name, num_replicas=num_replicas,
                          max_batch_size=max_batch_size, batch_wait_timeout_s=batch_wait_timeout_s,
                          autoscaling_config=autoscaling_config, ray_actor_options=ray_actor_options,
                          max_ongoing_requests=max_ongoing_requests)


def ray_data_map(dataset: Any, path: str | os.PathLike[str], function: str = "predict", *,
                 concurrency: int | tuple[int, int] = 1, batch_size: int | None = None,
                 num_cpus: float | None = None, max_rows: int | None = None, error_column: str | None = None,
                 id_column: str | None = None, start_timeout_s: float = 60.0) -> Any:
    """A Ray ``Dataset`` scored by a function of the directory at ``path``: its other columns, and the
    function's outputs by wire name (lazy, as Ray Data is; ``write_parquet`` or ``iter_batches`` runs it).

    Each of ``concurrency`` actors (a number, or Ray's ``(min, max)`` for an autoscaling pool) loads the
    directory once (:class:`~jaxport.application.serving.batches.BatchPredictor`) and scores NumPy
    batches of the columns named as the function's wire inputs.

    Args:
        dataset: a ``ray.data.Dataset`` with a column per wire input (``arg0``).
        batch_size: the rows of a batch (Ray's default where None; a multiple of a compiled size wastes no
            padding on a target compiled per size).
        num_cpus: the CPUs each actor holds (Ray's default where None).
        max_rows: as :func:`~jaxport.application.serving.batches.load_batches`.
        error_column: None: a row that fails the function's checks fails the job. A name: each row is
            checked alone, and a bad row gets its error in this column (None for each output) while every
            other row gets its outputs (and "" there): nothing is lost.
        id_column: the column that names a bad row in its error (``id=17: ShapeMismatchError: ...``).
        start_timeout_s: how long the data set's run waits for its actors to start (where Ray Data's
            ``DataContext.wait_for_min_actors_s`` says to wait forever): past it, the consuming call fails
            with Ray's ``GetTimeoutError`` (the cluster has no CPU left for them). Too few free CPUs when
            this is called is logged at once, naming the CPUs free and needed.

    Raises:
        MissingExtraError: Ray Data (``jaxport[ray]``) is not installed.
    """
    try:
        from jaxport.adapters.ray.data import map_with
    except ImportError as exc:
        raise MissingExtraError("Ray Data, which scores a data set on a Ray cluster,", "ray", exc) from exc
    return map_with(dataset, BatchPredictor, {"path": os.fspath(path), "function": function, "max_rows": max_rows,
                                              "error_column": error_column, "id_column": id_column},
                    concurrency=concurrency, batch_size=batch_size, num_cpus=num_cpus,
                    start_timeout_s=start_timeout_s)


def beam_model_handler(path: str | os.PathLike[str], function: str = "predict", *,
                       max_batch_size: int = DEFAULT_MAX_BATCH_SIZE, share_across_processes: bool = False,
                       max_rows: int | None = None, keyed: bool = False) -> Any:
    """A function of the directory at ``path`` as Apache Beam's ``ModelHandler``, for ``RunInference``.

    Each element is one example: its wire input names -> one row's array (without the batch axis); each
    result a ``PredictionResult`` whose ``inference`` is the outputs by wire name. Each worker loads the
    directory once and runs its golden examples. ``BatchElements`` joins at most ``max_batch_size``
    examples (at most the largest compiled size of a target compiled per size). Each example is first
    checked alone by a preprocess function (its names, arrays, dtypes, shapes, the function's constraints):
    with ``RunInference(...).with_exception_handling()``, a bad example goes alone to
    ``failed_preprocessing[0]`` (``(element, error)``) and every other reaches the main output
    (``failed_inferences`` holds whole batches, by Beam's contract).

    Args:
        path: a bundle (its workers need JAX) or a converted directory (its runtime only).
        share_across_processes: one loaded copy per worker machine (Beam's ``share_model_across_processes``).
        max_rows: as :func:`~jaxport.application.serving.batches.load_batches`.
        keyed: the elements are ``(key, example)`` pairs: the handler is Beam's ``KeyedModelHandler``
            around jaxport's (Beam takes preprocessing on the outer handler only: do not wrap it again).

    Raises:
        MissingExtraError: Apache Beam (``jaxport[beam]``) is not installed.
        ValueError: ``max_batch_size`` is below 1.
    """
    if max_batch_size < 1:
        raise ValueError(f"max_batch_size must be at least 1, not {max_batch_size}")
    try:
        from jaxport.adapters.beam.model_handler import JaxportModelHandler, RowCheck, checked
    except ImportError as exc:
        raise MissingExtraError("Apache Beam, whose RunInference runs a directory over a data set,", "beam",
                                exc) from exc
    largest = largest_compiled_rows(path, function)
    load = functools.partial(shared_batches, os.fspath(path), max_rows)
    handler = JaxportModelHandler(load, function, os.fspath(path),
                                  max_batch_size=min(max_batch_size, largest or max_batch_size),
                                  share_across_processes=share_across_processes)
    return checked(handler, RowCheck(load, function, keyed), keyed)


def largest_compiled_rows(path: str | os.PathLike[str], function: str) -> int | None:
    """The largest batch that a target compiled per size compiled ``function`` of ``path`` for, read from its
    manifest (its variants each bind one dimension variable); None where any size runs (a bundle, ONNX)."""
    directory = open_directory(path)
    if directory.kind is not PathKind.CONVERTED:
        return None
    variants = next((f.variants for f in directory.manifest.functions if f.name == function), ())
    if not variants or any(len(v.dims) != 1 for v in variants):
        return None
    return int(max(value for v in variants for _, value in v.dims))


def serve_on_ray(path: str | os.PathLike[str], *, host: str = "127.0.0.1", http_port: int = 8080,
                 replicas: int = 1, max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
                 batch_wait_timeout_s: float = DEFAULT_BATCH_WAIT_TIMEOUT_S) -> None:
    """``jaxport serve PATH --engine ray``: :func:`ray_serve_app` on the Ray cluster that ``RAY_ADDRESS``
    names (a local one without it), Serve's HTTP proxy on ``host:http_port``, until SIGTERM or SIGINT.

    Raises:
        MissingExtraError: Ray Serve (``jaxport[ray]``) is not installed.
        UsageError: ``replicas`` is below 1.
    """
    if replicas < 1:
        raise UsageError(f"--replicas must be at least 1, not {replicas}")
    app = ray_serve_app(path, num_replicas=replicas, max_batch_size=max_batch_size,
                        batch_wait_timeout_s=batch_wait_timeout_s)
    from jaxport.adapters.ray.cluster import run_until_signalled  # installed: ray_serve_app imported Ray

    run_until_signalled(app, name="jaxport", host=host, http_port=http_port)
