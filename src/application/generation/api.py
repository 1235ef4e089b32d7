"""``jaxport.load_generator``: a generative bundle or its conversion, ready to generate."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from jaxport.application import wiring
from jaxport.application.conversion.jax_model import jax_model
from jaxport.application.conversion.model import ConvertedModel
from jaxport.application.generation.generator import Generator
from jaxport.domain.serving.generative import GenerativeModel

if TYPE_CHECKING:
    from jaxport.adapters.jax.bundles.loaded import Bundle

__all__ = ["load_generator"]


def load_generator(model: str | os.PathLike[str] | Bundle | ConvertedModel, **runtime_options: Any) -> Generator:
    """A :class:`Generator` on a generative bundle or a directory converted from one.

    Text in and out where the bundle carries a tokenizer (read from the
    directory: a model given loaded generates ids only), and :meth:`Generator.chat`
    where it carries a chat template (both need the ``jaxport[text]`` extra).
    A bundle (its directory, or the :class:`jaxport.Bundle` loaded from it)
    runs with JAX, each step jitted once, the cache donated to each step. A
    converted directory runs with its target's runtime and no JAX: on ONNX
    Runtime with I/O binding, the cache kept in ONNX Runtime's buffers between
    steps; on LiteRT's ``CompiledModel`` with tensor buffers, the cache kept in
    them (a directory converted for static shapes: its one model's signatures); on
    IREE through the directory's checked calls, the cache kept as IREE's device
    arrays, on the calling thread (the ``local-sync`` driver, unless ``driver=``
    says otherwise); on a SavedModel with TensorFlow, the cache kept in its
    tensors; on the other targets through its checked calls. The next token is
    picked on the host with NumPy.

    Args:
        model: the directory, or a loaded bundle or converted model.
        runtime_options: a converted directory's runtime options (those of :func:`jaxport.load_converted`).

    Raises:
        GenerationError: the model was saved without a generation spec.
        ArtifactError: the directory is damaged (see :func:`jaxport.load_bundle`, :func:`jaxport.load_converted`).
    """
    factory = wiring.generator_factory()
    if isinstance(model, (str, os.PathLike)):
        return factory.load(model, **runtime_options)
    if isinstance(model, ConvertedModel):
        return factory.generator(model, checked=True)
    return factory.generator(jax_model(model))


def served_model(model: ConvertedModel, name: str, max_slots: int, max_queue: int) -> GenerativeModel:
    """The generative model that ``jaxport serve`` answers under ``name``: the generator of ``model``, loaded from
    its directory already (by the server, for its functions), on its target's runner (on ONNX Runtime, in the
    sessions the functions run in; on IREE, the same directory loaded again for the calling thread), run by a
    scheduler of ``max_slots`` rows and ``max_queue`` waiting requests.

    Raises:
        GenerationError: the directory holds no generation spec, or ``max_slots``/``max_queue`` is out of range.
        ArtifactError: a step's model cannot be opened, or the tokenizer's file changed.
    """
    return wiring.generator_factory().served(model, name, max_slots, max_queue)
