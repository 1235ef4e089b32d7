"""Bundles: :func:`save_bundle`, :func:`load_bundle` and the :class:`Bundle` it gives back.

A bundle is several exported functions that share weights, saved as one
directory (its format: :mod:`jaxport.domain.bundle.manifest`). Saving checks every
function against the weights before anything is written
(:mod:`jaxport.application.bundles.save`); loading checks every file before anything is made
(:mod:`jaxport.application.bundles.load`) and places the weights (:mod:`jaxport.adapters.jax.bundles.weights`);
:mod:`jaxport.adapters.jax.bundles.loaded` holds the loaded model's types, :mod:`jaxport.adapters.jax.bundles.weights`
the checks of functions against weights that both sides run. This module
gathers the public names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jaxport.application.bundles.load import load_bundle as load_bundle
from jaxport.adapters.jax.bundles.weights import flatten_params as flatten_params
from jaxport.adapters.jax.bundles.loaded import BoundFunction as BoundFunction
from jaxport.adapters.jax.bundles.loaded import Bundle as Bundle

if TYPE_CHECKING:
    from jaxport.application.bundles.save import save_bundle as save_bundle

__all__ = ["BoundFunction", "Bundle", "flatten_params", "load_bundle", "save_bundle"]


def __getattr__(name: str) -> Any:
    # save_bundle on first use: a process that only loads never imports saving's modules (save,
    # examples, consumers, the safetensors writer: 3.4 ms of a fresh first answer
    # under -X importtime; tests/e2e/test_load_path_imports.py keeps them out).
    if name == "save_bundle":
        from jaxport.application.bundles.save import save_bundle

        globals()[name] = save_bundle
        return save_bundle
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
