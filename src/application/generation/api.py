"""``jaxport.load_generator``: a generative bundle, or a loaded one, ready to generate."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from jaxport.application import wiring
from jaxport.application.bundles.api import load_bundle
from jaxport.application.generation.generator import Generator
from jaxport.domain.errors import GenerationError

if TYPE_CHECKING:
    from jaxport.application.bundles.api import Bundle

__all__ = ["load_generator"]


def load_generator(model: str | os.PathLike[str] | Bundle) -> Generator:
    """A :class:`Generator` on a generative bundle: its directory, or the :class:`jaxport.Bundle` loaded from it.

    The bundle's steps run with JAX, each jitted once, the cache donated to
    each step; the next token is picked on the host with NumPy.

    Raises:
        GenerationError: the bundle was saved without a generation spec.
        ArtifactError: the directory is damaged (see :func:`jaxport.load_bundle`).
    """
    bundle = model if not isinstance(model, (str, os.PathLike)) else load_bundle(model)
    spec = bundle.manifest.generation
    if spec is None:
        raise GenerationError("model", "the bundle holds no generation spec: save it with "
                                       "save_bundle(..., generation=jaxport.GenerationSpec(...))")
    return Generator(spec, wiring.jax_step_runner(bundle, spec), wiring.sampler_factory())
