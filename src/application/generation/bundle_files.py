"""What a generative bundle adds to a bundle at save: its checked spec and its tokenizer's file."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jaxport.domain.artifact.record import ArtifactRecord
from jaxport.domain.errors import GenerationSpecError
from jaxport.domain.calls.signature import Signature
from jaxport.domain.generation.checks import check_loaded, resolve
from jaxport.domain.generation.ports import ChatTemplate, TextCodec
from jaxport.domain.opened_directory import OpenedDirectory
from jaxport.domain.generation.spec import TOKENIZER_FILE, GenerationSpec

if TYPE_CHECKING:
    from jaxport.application.generation.factory import GeneratorFactory


def generative_files(spec: GenerationSpec, records: Mapping[str, ArtifactRecord], takes_params: Mapping[str, bool],
                     factory: GeneratorFactory) -> tuple[GenerationSpec, dict[str, bytes]]:
    """The spec to record (checked against the functions, filled in) and the files it brings (``factory``: the
    tokenizer and the chat template that generation reads them with, which must accept the spec's).

    Raises:
        GenerationSpecError: the spec does not fit the functions, its tokenizer cannot be read by
            ``tokenizers`` or its chat template does not parse (the message names it).
        MissingExtraError: a tokenizer or chat template without the ``jaxport[text]`` extra.
    """
    resolved = resolve(spec, records, takes_params)
    if spec.chat_template is not None:
        factory.chat(spec.chat_template, "the chat template")  # it compiles
    if spec.tokenizer is None:
        return resolved, {}
    try:
        blob = Path(spec.tokenizer).read_bytes()
    except OSError as exc:
        raise GenerationSpecError(f"the tokenizer {spec.tokenizer}", f"it cannot be read: {exc}") from exc
    factory.text(blob, spec.tokenizer)  # tokenizers reads it
    return dataclasses.replace(resolved, tokenizer=TOKENIZER_FILE), {TOKENIZER_FILE: blob}


def check_generative_files(directory: OpenedDirectory[Any], text: Callable[[bytes, str], TextCodec],
                           chat: Callable[[str, str], ChatTemplate],
                           signatures: Callable[[], Mapping[str, Signature]]) -> None:
    """Checks a generative directory's spec as generation reads it (``jaxport check``): against its functions'
    ``signatures`` (:func:`~jaxport.domain.generation.checks.check_loaded`), its tokenizer's file read by
    ``text`` (its size bounded first), its chat template compiled by ``chat``.

    Raises:
        GenerationSpecError: naming the tokenizer or the chat template that is refused.
        ArtifactError: the spec does not fit the functions, the tokenizer's file is missing or changed.
    """
    spec = directory.manifest.generation
    if spec is None:
        return
    check_loaded(spec, signatures(), f"the generation spec of {directory.root}")
    if spec.tokenizer is not None:
        text(directory.read(spec.tokenizer), spec.tokenizer)
    if spec.chat_template is not None:
        chat(spec.chat_template, f"the chat template of {directory.root}")
