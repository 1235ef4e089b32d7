"""Making generators: :class:`GeneratorFactory`, behind :func:`jaxport.load_generator` and ``jaxport serve``
(which serves a generator through a scheduler).

A generator runs a loaded model's steps with the runner of the model's
target (its entry in :mod:`jaxport.application.target_adapters`, bound to the
runtime the model was loaded on: the cache kept in that runtime's buffers),
or through the model's checked calls where the target has none; the tokenizer
is read from the directory the model was opened from, checked at read.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jaxport.application.conversion.loader import ConvertedLoader
from jaxport.application.conversion.model import ConvertedModel
from jaxport.application.generation.generator import Generator
from jaxport.application.generation.schedulers import scheduling_of
from jaxport.domain.errors import GenerationError
from jaxport.domain.converted.prefill_lengths import prefill_batches, prefill_lengths
from jaxport.domain.generation.checks import check_loaded
from jaxport.domain.generation.ports import ChatTemplate, SamplerFactory, StepRunner, TextCodec
from jaxport.domain.generation.scheduling import Scheduler
from jaxport.domain.generation.spec import GenerationSpec
from jaxport.domain.serving.generative import GenerativeModel


@dataclass(frozen=True, slots=True)
class GeneratorFactory:
    """Makes the generators of loaded models.

    The composition root builds the process's one (:func:`jaxport.application.wiring.generator_factory`);
    a test makes its own on its own ports.

    Attributes:
        loader: loads a directory (again, with its target's generation options, where they differ).
        checked_steps: the runner of a model's steps through its checked calls (where its target has none).
        sampler: picks the next tokens.
        text: the tokenizer that a ``tokenizer.json``'s bytes describe (its name, for messages).
        chat: a chat template, compiled (its text, and what it is for messages: ``the chat template of gpt``).
        schedulers: the scheduler that serves a generator to many callers, with its most slots and its
            most waiting requests.
    """

    loader: ConvertedLoader
    checked_steps: Callable[[ConvertedModel, GenerationSpec], StepRunner]
    sampler: SamplerFactory
    text: Callable[[bytes, str], TextCodec]
    chat: Callable[[str, str], ChatTemplate]
    schedulers: Callable[[Generator, int, int], Scheduler]

    def load(self, path: str | os.PathLike[str], **runtime_options: Any) -> Generator:
        """:func:`jaxport.load_generator` of a directory: loaded once, with its target's generation options."""
        return self.generator(self.loader.model(self.loader.open(path), generating=True, **runtime_options))

    def generator(self, model: ConvertedModel, *, checked: bool = False) -> Generator:
        """The generator of ``model`` (loaded from a directory: its tokenizer read from there), on its target's
        runner where it has one, on the runtime generation runs with (``model``'s, or the same directory loaded
        again where its target generates with other options: IREE on the calling thread); ``checked``: of a
        model the caller loaded, its steps through its checked calls, token ids only.

        Raises:
            GenerationError: ``model`` holds no generation spec.
            ArtifactError: a step's model cannot be opened, or the tokenizer's file changed.
        """
        wanted = self.loader.targets[model.target].generation_options
        if not checked and model.directory is not None and any(key not in model.options for key in wanted):
            model = self.loader.model(model.directory, generating=True, **model.options)
        spec = model.manifest.generation
        if spec is None:
            raise GenerationError("model", "it holds no generation spec: save its bundle with "
                                           "save_bundle(..., generation=jaxport.GenerationSpec(...))")
        check_loaded(spec, {name: model.functions[name].signature for name in (spec.prefill, spec.decode)
                            if name in model.functions}, _of("the generation spec", model))
        text = None if checked or spec.tokenizer is None or model.directory is None else \
            self.text(model.directory.read(spec.tokenizer), spec.tokenizer)
        runner = None if checked else model.own_steps(spec)
        return Generator(spec, runner or self.checked_steps(model, spec), self.sampler, text=text,
                         lengths=functools.partial(prefill_lengths, spec, model.functions[spec.prefill]),
                         chat_template=None if spec.chat_template is None else self.chat(
                             spec.chat_template, _of("the chat template", model)),
                         batches=functools.partial(prefill_batches, spec, model.functions[spec.prefill]))

    def served(self, model: ConvertedModel, name: str, max_slots: int, max_queue: int) -> GenerativeModel:
        """The generative model that ``jaxport serve`` answers OpenAI's requests with, under ``name``: the
        generator of ``model`` (as :meth:`generator`) run by a scheduler of ``max_slots`` and ``max_queue``.

        Raises:
            GenerationError: as :meth:`generator`, or ``max_slots`` or ``max_queue`` is not a count.
            ArtifactError: as :meth:`generator`.
        """
        generator = self.generator(model)
        chat = generator.render_chat if generator.spec.chat_template is not None else None
        return GenerativeModel(name, generator.spec, generator.codec, chat,
                               self.schedulers(generator, max_slots, max_queue), room=generator.room,
                               scheduling=scheduling_of(generator, max_slots))


def _of(what: str, model: ConvertedModel) -> str:
    """``what`` of the directory ``model`` was opened from (``the chat template of /models/gpt``)."""
    return what if model.directory is None else f"{what} of {model.directory.root}"
