"""What a generative bundle adds to a bundle at save: its checked spec and its tokenizer's file."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path

from jaxport.domain.artifact.record import ArtifactRecord
from jaxport.domain.errors import GenerationSpecError
from jaxport.domain.generation.checks import resolve
from jaxport.domain.generation.spec import TOKENIZER_FILE, GenerationSpec


def generative_files(spec: GenerationSpec, records: Mapping[str, ArtifactRecord], takes_params: Mapping[str, bool]
                     ) -> tuple[GenerationSpec, dict[str, bytes]]:
    """The spec to record (checked against the functions, filled in) and the files it brings.

    Raises:
        GenerationSpecError: the spec does not fit the functions, or its tokenizer is not a
            readable JSON file (the message names it).
    """
    resolved = resolve(spec, records, takes_params)
    if spec.tokenizer is None:
        return resolved, {}
    try:
        blob = Path(spec.tokenizer).read_bytes()
        json.loads(blob)
    except (OSError, ValueError) as exc:
        raise GenerationSpecError(f"the tokenizer {spec.tokenizer}", f"it is not a readable JSON file: {exc}") from exc
    return dataclasses.replace(resolved, tokenizer=TOKENIZER_FILE), {TOKENIZER_FILE: blob}
