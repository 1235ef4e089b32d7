"""``jaxport.load_generator``: a generative bundle or its conversion, ready to generate."""

from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING, Any

from jaxport.application import wiring
from jaxport.application.conversion.api import load_converted
from jaxport.application.conversion.model import ConvertedModel, is_converted
from jaxport.application.generation.generator import Generator
from jaxport.domain.errors import GenerationError
from jaxport.domain.generation.compiled import prefill_lengths
from jaxport.domain.generation.ports import StepRunner
from jaxport.domain.generation.spec import GenerationSpec

if TYPE_CHECKING:
    from jaxport.application.bundles.api import Bundle

__all__ = ["load_generator"]


def load_generator(model: str | os.PathLike[str] | Bundle | ConvertedModel, **runtime_options: Any) -> Generator:
    """A :class:`Generator` on a generative bundle or a directory converted from one.

    A bundle (its directory, or the :class:`jaxport.Bundle` loaded from it)
    runs with JAX, each step jitted once, the cache donated to each step. A
    converted directory runs with its target's runtime and no JAX: on ONNX
    Runtime with I/O binding, the cache kept in ONNX Runtime's buffers between
    steps; on the other targets through the directory's checked calls. The
    next token is picked on the host with NumPy.

    Args:
        model: the directory, or a loaded bundle or converted model.
        runtime_options: a converted directory's runtime options (those of :func:`jaxport.load_converted`).

    Raises:
        GenerationError: the model was saved without a generation spec.
        ArtifactError: the directory is damaged (see :func:`jaxport.load_bundle`, :func:`jaxport.load_converted`).
    """
    if isinstance(model, (str, os.PathLike)) and is_converted(model):
        root = os.fspath(model)
        converted = load_converted(root, **runtime_options)
        spec = _spec(converted.manifest.generation)
        if converted.target == "onnx":
            return Generator(spec, wiring.onnx_step_runner(root, converted.manifest, spec, runtime_options),
                             wiring.sampler_factory())
        model = converted
    if isinstance(model, ConvertedModel):
        spec = _spec(model.manifest.generation)
        prefill = model.functions[spec.prefill]
        return Generator(spec, _host_runner(model, spec), wiring.sampler_factory(),
                         lengths=functools.partial(prefill_lengths, spec, prefill))
    if isinstance(model, (str, os.PathLike)):
        # Here, not at the head: a converted directory generates without importing JAX.
        from jaxport.application.bundles.api import load_bundle

        model = load_bundle(model)
    spec = _spec(model.manifest.generation)
    return Generator(spec, wiring.jax_step_runner(model, spec), wiring.sampler_factory())


def _spec(spec: GenerationSpec | None) -> GenerationSpec:
    if spec is None:
        raise GenerationError("model", "it holds no generation spec: save its bundle with "
                                       "save_bundle(..., generation=jaxport.GenerationSpec(...))")
    return spec


def _host_runner(model: ConvertedModel, spec: GenerationSpec) -> StepRunner:
    """The runner that calls the directory's checked flat calls, the cache held as host arrays."""
    calls, inputs = {}, {}
    for name, kinds in spec.steps:
        sig = model.functions[name].signature
        calls[name] = model[name].run_flat
        inputs[name] = ([a.dtype.value for a in sig.in_avals], [len(a.shape) for a in sig.in_avals], kinds)
    return wiring.host_step_runner(spec, calls, inputs)
