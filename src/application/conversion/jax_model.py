"""An artifact or a bundle as a model of the call front, run by JAX: the same checks as every target.

``jax_model(exported_or_bundle)`` gives the :class:`~jaxport.application.conversion.model.ConvertedModel`
that :func:`jaxport.load_converted` gives for a converted directory, with
target ``"jax"``: one variant of any size per function, a bundle's weights
bound by the runtime. So one bad call gets the same typed error and message
on JAX as on every converted target (tests/e2e/test_runtime_calls.py).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import TYPE_CHECKING, Any

from jaxport.domain.bundle.manifest import EXAMPLES_FILE
from jaxport.domain.converted.manifest import ConvertedFunction, ConvertedManifest, Variant
from jaxport.domain.calls.front import with_weights_bound
from jaxport.application.target_adapters import ADAPTERS, JAX
from .model import ConvertedModel

if TYPE_CHECKING:
    from jaxport.adapters.jax.bundles.loaded import Bundle
    from jaxport.adapters.jax.exported.exported import Exported
    from jaxport.domain.opened_directory import OpenedDirectory


def jax_model(source: Exported | Bundle, directory: OpenedDirectory[Any] | None = None) -> ConvertedModel:
    """The functions of an ``Exported`` (one, named after the exported function) or of a ``Bundle``
    (its weights bound, its steps run by :data:`~jaxport.application.target_adapters.JAX`'s entry;
    ``directory``: the bundle it was loaded from, opened), called through the front and run by JAX."""
    # JAX's runtime: the conversion modules import this one without JAX (tests/e2e/test_conversion_imports.py)
    from jaxport.adapters.jax.exported.runtime import JaxRuntime
    from jaxport.adapters.jax.bundles.loaded import Bundle

    entries: list[tuple[str, Any, bool]]
    if isinstance(source, Bundle):
        entries = [(e.name, source.functions[e.name], e.takes_params) for e in source.manifest.functions]
        weights = source.weight_leaves
    else:
        entries = [(source.fun_name, source, False)]
        weights = []
    functions = []
    for name, exp, takes in entries:
        caller = with_weights_bound(exp.record.signature, len(weights) if takes else 0)
        functions.append(ConvertedFunction(dataclasses.replace(caller, name=name), (Variant(""),)))
    runtime = JaxRuntime({name: (exp, weights if takes else []) for name, exp, takes in entries})
    if not isinstance(source, Bundle):
        return ConvertedModel(ConvertedManifest(JAX, {}, tuple(functions)), runtime, {})
    steps = ADAPTERS[JAX].steps  # a bundle's steps, its examples and its generation spec too
    manifest = ConvertedManifest(JAX, {}, tuple(functions), examples=source.manifest.examples,
                                 examples_file=EXAMPLES_FILE, generation=source.manifest.generation)
    return ConvertedModel(manifest, runtime, {}, directory=directory, steps=steps and functools.partial(steps, source))

