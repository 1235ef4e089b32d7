"""``jaxport.load_generator``: a generative bundle or its conversion, ready to generate."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jaxport.application import wiring
from jaxport.application.conversion.api import load_converted
from jaxport.application.conversion.model import ConvertedModel, is_converted, read_converted
from jaxport.application.generation.generator import Generator
from jaxport.domain.errors import GenerationError
from jaxport.domain.converted.prefill_lengths import prefill_lengths
from jaxport.adapters.storage.bundle_dir import read_function
from jaxport.domain.generation.ports import ChatTemplate, StepRunner, TextCodec
from jaxport.domain.generation.spec import GenerationSpec

if TYPE_CHECKING:
    from jaxport.application.bundles.api import Bundle

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
    root = os.fspath(model) if isinstance(model, (str, os.PathLike)) else None
    if root is not None and is_converted(root):
        if read_converted(root)[0].target == "iree" and "driver" not in runtime_options:
            # A decode step is small work: IREE's task pool hands it to its threads and waits for
            # them, which cost more than they save (0.71x of jax.jit's tokens/s at batch 8 against
            # 1.12x on the calling thread, on 2 cores): generation runs on the calling thread.
            runtime_options = {**runtime_options, "driver": "local-sync"}
        return converted_generator(load_converted(root, **runtime_options), root, runtime_options)
    if isinstance(model, ConvertedModel):
        spec = _spec(model.manifest.generation)
        prefill = model.functions[spec.prefill]
        text = _text(spec, None)
        return Generator(spec, _host_runner(model, spec), wiring.sampler_factory(), text=text[0],
                         lengths=functools.partial(prefill_lengths, spec, prefill), chat_template=text[1])
    if root is not None:
        # Here, not at the head: a converted directory generates without importing JAX.
        from jaxport.application.bundles.api import load_bundle

        model = load_bundle(root)
    assert not isinstance(model, (str, os.PathLike))
    return bundle_generator(model, root)


def converted_generator(converted: ConvertedModel, root: str | os.PathLike[str],
                        runtime_options: dict[str, Any] | None = None) -> Generator:
    """:func:`load_generator`'s generator of the directory at ``root``, loaded already (``converted``, with
    ``runtime_options``), so that a server that loaded it for its functions does not load it again: on ONNX
    Runtime, its steps run in the sessions the directory's calls run in.

    Raises:
        GenerationError: the directory holds no generation spec.
        ArtifactError: a step's model cannot be opened, or the tokenizer's file changed since the loader checked it.
    """
    options = {} if runtime_options is None else runtime_options
    spec = _spec(converted.manifest.generation)
    text = _text(spec, lambda file: Path(root, file).read_bytes())  # its digest checked by the loader
    if converted.target == "onnx":
        return Generator(spec, wiring.onnx_step_runner(converted[spec.prefill].runtime, converted.manifest, spec),
                         wiring.sampler_factory(), text=text[0], chat_template=text[1])
    compiled = _own_runner(os.fspath(root), converted, spec, options)
    prefill = converted.functions[spec.prefill]
    lengths = functools.partial(prefill_lengths, spec, prefill)
    if compiled is not None:
        return Generator(spec, compiled, wiring.sampler_factory(), text=text[0], chat_template=text[1],
                         lengths=lengths)
    return Generator(spec, _host_runner(converted, spec), wiring.sampler_factory(), text=text[0],
                     lengths=lengths, chat_template=text[1])


def bundle_generator(bundle: Bundle, root: str | os.PathLike[str] | None) -> Generator:
    """:func:`load_generator`'s generator of ``bundle``, loaded already from ``root`` (its tokenizer read from
    there; None: ids only), so that a server that loaded it for its functions does not load it again.

    Raises:
        GenerationError: the bundle was saved without a generation spec.
        ArtifactError: the tokenizer's file changed since the bundle was saved.
    """
    spec = _spec(bundle.manifest.generation)
    manifest = bundle.manifest
    text = _text(spec, None if root is None else lambda file: read_function(root, manifest, file))
    return Generator(spec, wiring.jax_step_runner(bundle, spec), wiring.sampler_factory(), text=text[0],
                     chat_template=text[1])


def _text(spec: GenerationSpec, read: Callable[[str], bytes] | None) -> tuple[TextCodec | None, ChatTemplate | None]:
    """The bundled tokenizer (read with ``read``; None: not at hand) and chat template."""
    codec = None if spec.tokenizer is None or read is None else wiring.text_codec(read(spec.tokenizer), spec.tokenizer)
    return codec, None if spec.chat_template is None else wiring.chat_template(spec.chat_template)


def _spec(spec: GenerationSpec | None) -> GenerationSpec:
    if spec is None:
        raise GenerationError("model", "it holds no generation spec: save its bundle with "
                                       "save_bundle(..., generation=jaxport.GenerationSpec(...))")
    return spec


def _own_runner(root: str, converted: ConvertedModel, spec: GenerationSpec,
                runtime_options: dict[str, Any]) -> StepRunner | None:
    """The runner of the target's own that keeps the cache in its runtime between steps (LiteRT's
    ``CompiledModel`` where it runs the directory; TensorFlow on the SavedModel loaded), else None."""
    if converted.target == "litert":
        return wiring.litert_step_runner(root, converted.manifest, spec, runtime_options)
    if converted.target == "savedmodel":
        return wiring.savedmodel_step_runner(converted[spec.prefill].runtime, converted.manifest, spec)
    return None


def _host_runner(model: ConvertedModel, spec: GenerationSpec) -> StepRunner:
    """The runner that calls the directory's checked flat calls, the cache held as their results."""
    calls: dict[str, Callable[[list[Any]], list[Any]]] = {}
    inputs = {}
    for name, kinds in spec.steps:
        sig = model.functions[name].signature
        calls[name] = model[name].run_flat
        inputs[name] = ([a.dtype.value for a in sig.in_avals], [len(a.shape) for a in sig.in_avals], kinds)
    if model.target == "iree":  # its results stay IREE's device arrays: the cache is not copied each step
        calls = wiring.iree_device_calls(model[spec.prefill].runtime, {name: model[name].variant_of for name in calls})
    return wiring.host_step_runner(spec, calls, inputs)
