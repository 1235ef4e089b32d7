"""``serve``: a bundle or a converted directory served over the Open Inference Protocol (REST and gRPC).

Every function of the directory becomes one protocol model, named after it,
whose metadata comes from the function's wire interface (wire names, datatypes, ``-1``
for symbolic dimensions: :mod:`jaxport.domain.serving.protocol`) and whose requests go
through jaxport's call front before the runtime runs them. The protocol
stack is KServe's (:mod:`jaxport.adapters.kserve.server`); KServe is the
``serve`` extra, imported only here.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from jaxport.domain.errors import ArtifactError, MissingExtraError
from jaxport.domain.serving.generative import GenerativeModel
from jaxport.domain.serving.options import (
    DEFAULT_DRAIN_SECONDS, DEFAULT_MAX_BATCH_DELAY_MS, DEFAULT_MAX_BATCH_SIZE, DEFAULT_MAX_OPENAI_REQUEST_BYTES,
    DEFAULT_MAX_QUEUE, DEFAULT_MAX_REQUEST_BYTES, DEFAULT_MAX_SLOTS, ServeOptions
)
from jaxport.domain.calls.front import call_checker, leaf_paths, result_paths
from jaxport.domain.serving.protocol import ServedFunction, batch_variable, wire_interface
from jaxport.domain.opened_directory import OpenedDirectory
from jaxport.domain.path_kind import PathKind
from jaxport.adapters.jax.installed import require_jax
from jaxport.application.conversion.api import load_model, open_directory
from jaxport.application.conversion.model import ConvertedModel


def serve(path: str | os.PathLike[str], *, host: str = "127.0.0.1", http_port: int = 8080,
          grpc_port: int = 8081, batch: Iterable[str] = (), max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
          max_batch_delay_ms: float = DEFAULT_MAX_BATCH_DELAY_MS,
          max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES, max_slots: int = DEFAULT_MAX_SLOTS,
          max_queue: int = DEFAULT_MAX_QUEUE, drain_seconds: float = DEFAULT_DRAIN_SECONDS,
          model_name: str | None = None, max_openai_request_bytes: int = DEFAULT_MAX_OPENAI_REQUEST_BYTES,
          allow_origins: Iterable[str] = ()) -> None:
    """Serves every function of ``path`` over REST and gRPC until SIGTERM or SIGINT; a generative
    bundle or its conversion also gets OpenAI's completions (and chat completions where a tokenizer
    and a chat template are bundled) under ``/openai/v1``.

    The servers listen at once and report not ready (``/v2/health/ready``)
    until every function is loaded and the directory's golden examples (when
    it has some) passed on this machine. On SIGTERM the server turns not
    ready, runs the requests its batcher holds, stops accepting, answers every
    request in flight, and returns.

    A request that does not match its function (an unknown or missing input,
    another datatype, a wrong shape, a violated constraint), malformed JSON
    and a body over ``max_request_bytes`` get HTTP 400 / gRPC
    ``INVALID_ARGUMENT`` with jaxport's message (``DtypeMismatchError: ...``);
    an unknown model 404 / ``NOT_FOUND``. ``bfloat16`` inputs and outputs
    travel as ``FP32`` (see :mod:`jaxport.domain.serving.protocol`).

    Args:
        path: a bundle (run on JAX) or a directory that jaxport converted
            (:func:`jaxport.load_converted`: IREE, a SavedModel, any registered target).
        host: the address both servers bind (``0.0.0.0`` to accept other machines).
        http_port, grpc_port: the REST and gRPC ports.
        batch: functions whose concurrent requests are joined into one call
            along their batch dimension (each input and output must lead with
            the same dimension variable). A target compiled per size runs a
            joined call at the nearest compiled size, padded with copies of a
            real row that are dropped from the results.
        max_batch_size: the most rows of one joined call.
        max_batch_delay_ms: how long a request waits for others to join it.
        max_request_bytes: the largest request body (default 64 MiB).
        max_slots: a generative model's most requests at once (the rows of its decode batch, where
            requests join between steps; else requests run one at a time).
        max_queue: the most generation requests waiting (more: HTTP 429 with ``Retry-After``).
        drain_seconds: on SIGTERM, how long running generation requests may finish before they are cancelled.
        model_name: the generative model's name in OpenAI's requests (default: the directory's name).
        max_openai_request_bytes: the largest request body under ``/openai/v1`` (default 1 MiB), whose routes
            take only ``application/json`` (HTTP 415 otherwise) and refuse a prompt text of more bytes than
            16 per token of the cache before tokenizing it.
        allow_origins: the web origins whose pages may call the server (CORS; ``*``: any); a request that
            carries another ``Origin`` header gets HTTP 403 (by default, every one that carries one).

    Raises:
        UsageError: an option is out of range, ``batch`` names a function that
            is not served or whose inputs and outputs do not all lead with one
            batch dimension variable.
        ArtifactError: ``path`` is not a bundle or a directory jaxport converted (said before the
            ports are bound), is damaged, or its golden examples fail here.
        ConversionError: a function has an input or output that the protocol
            cannot carry (complex, 8-bit floats, PRNG keys).
        MissingExtraError: KServe (``jaxport[serve]``) or the directory's runtime is not installed,
            or ``path`` is a bundle and JAX (``jaxport[jax]``) is not.
        OSError: a port cannot be bound.
    """
    options = ServeOptions(host, http_port, grpc_port, tuple(batch), max_batch_size, max_batch_delay_ms,
                           max_request_bytes, max_slots, max_queue, drain_seconds, model_name,
                           max_openai_request_bytes, tuple(allow_origins))
    try:  # the serve extra: importing this module (jaxport.serve) works without it
        from jaxport.adapters.kserve.server import KServeServer
        from jaxport.adapters.kserve.metrics import serving_metrics
    except ImportError as exc:
        raise MissingExtraError("KServe, which serves the Open Inference Protocol,", "serve", exc) from exc
    directory = open_directory(path)  # what the path is: said before anything listens
    if directory.kind is PathKind.BUNDLE:
        require_jax()  # a bundle runs on JAX
    KServeServer(options, serving_metrics()).run(*served_loads(directory, options))


def served_loads(directory: OpenedDirectory[Any], options: ServeOptions
                 ) -> tuple[Callable[[], Sequence[ServedFunction]], Callable[[], GenerativeModel] | None]:
    """What the server calls, on its loading thread, to load what it serves from ``directory`` (opened once):
    its functions (:func:`load_checked`), then its generative model where its manifest has a generation spec
    (:func:`load_generative`, else None), both on one load of the directory (on ONNX Runtime, one session per
    model file; the golden examples run on it too)."""
    loaded = functools.cache(lambda: load_model(directory))
    generative = None
    if directory.manifest.generation is not None:  # after the functions, on the model they loaded
        generative = functools.partial(load_generative, Path(directory.root), options, loaded)
    return lambda: load_checked(directory.root, options, loaded()), generative


def load_generative(path: Path, options: ServeOptions, loaded: Callable[[], ConvertedModel]) -> GenerativeModel:
    """The generative model of the directory at ``path``, loaded already (``loaded``: on the runtime its
    functions run on), run by a scheduler of ``options.max_slots`` and ``options.max_queue``.

    Raises:
        GenerationError: the spec is missing or the options are out of range.
        ArtifactError, MissingExtraError: as :func:`jaxport.load_generator`.
    """
    from jaxport.application.generation.api import served_model  # the generative path only

    return served_model(loaded(), options.model_name or path.resolve().name, options.max_slots, options.max_queue)


def load_checked(path: str | os.PathLike[str], options: ServeOptions, model: ConvertedModel) -> Sequence[ServedFunction]:
    """The functions of ``model`` (loaded from the directory at ``path``), after checking the options against
    them and running the directory's golden examples on them.

    Raises:
        UsageError: ``options.batch`` names a function that is not served, or cannot be joined.
        ArtifactError: a golden example fails on this machine (the message holds the report).
    """
    functions = served_functions(model)
    options.check_batch([f.name for f in functions])
    for function in functions:
        if function.name in options.batch:
            batch_variable(function.wire)
    if model.manifest.examples:  # 20 ms that a directory without examples never pays
        from jaxport.application.conversion.golden import run_examples

        report = run_examples(os.fspath(path), model)
        if report.examples and not report.ok:
            raise ArtifactError(f"The golden examples of {path} fail on this machine, so it is not served:\n"
                                f"{report}")
    return functions


def served_functions(model: ConvertedModel) -> list[ServedFunction]:
    """The functions of ``model`` (the front's checked flat call), with the sizes of their variants."""
    served = []
    for name in model:
        signature = model[name].signature
        wire = wire_interface(name, signature, leaf_paths(signature.in_tree), result_paths(signature.out_tree))
        compiled = tuple(v.binding for v in model.functions[name].variants)
        served.append(ServedFunction(name, signature, wire, compiled, call_checker(signature).check,
                                     model[name].run_flat, model.target))
    return served
