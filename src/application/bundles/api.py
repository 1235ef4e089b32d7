"""Bundles: :func:`save_bundle`, :func:`load_bundle` and the :class:`Bundle` it gives back.

A bundle is several exported functions that share weights, saved as one
directory (its format: :mod:`jaxport.domain.bundle.manifest`). Saving checks every
function against the weights before anything is written
(:mod:`jaxport.application.bundles.save`); loading checks every file before anything is made
(:mod:`jaxport.application.bundles.load`, its loader built once in :mod:`jaxport.application.wiring`) and places the weights (:mod:`jaxport.adapters.jax.bundles.weights`);
:mod:`jaxport.adapters.jax.bundles.loaded` holds the loaded model's types, :mod:`jaxport.adapters.jax.bundles.weights`
the checks of functions against weights that both sides run. This module
gathers the public names.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from jaxport.application import wiring
from jaxport.adapters.jax.bundles.weights import Mesh, flatten_params as flatten_params
from jaxport.adapters.jax.bundles.loaded import BoundFunction as BoundFunction
from jaxport.adapters.jax.bundles.loaded import Bundle as Bundle

if TYPE_CHECKING:
    from jaxport.application.bundles.save import save_bundle as save_bundle

__all__ = ["BoundFunction", "Bundle", "flatten_params", "load_bundle", "save_bundle"]


def load_bundle(path: str | os.PathLike[str], *, params: Any = None, mesh: Mesh | None = None,
                verify: bool = True, allowed_custom_calls: Iterable[str] = ()) -> Bundle:
    """Loads the bundle that :func:`jaxport.save_bundle` wrote at ``path``.

    Every file is checked before the :class:`Bundle` is made (its size and
    digest, the manifest's format version, the weights' header against the
    manifest, each function against the weights): a damaged bundle raises,
    it never loads in part. The weights file is read once, memory-mapped;
    on one CPU device the weights are used in place, without a copy.

    Args:
        path: the bundle directory.
        params: weights to use instead of the bundle's (checked like
            :meth:`Bundle.with_params`); the weights file is then not read.
        mesh: a mesh of the axes the functions were exported with: each
            weight is placed with its recorded sharding over it (replicated
            where none is recorded), in one process or across the processes
            of JAX's distributed runtime (each reads only its devices'
            slices). Without a mesh, weights with recorded shardings go to
            this process's first devices, the others to the default device.
        verify: verify each function's artifact as :func:`jaxport.load` does
            (its modules parsed in a separate process, ``main``'s signature and
            custom calls checked); verdicts are remembered per digest.
        allowed_custom_calls: custom-call targets to accept besides those JAX
            guarantees stable; the artifacts' own disabled checks do not count.

    Raises:
        ArtifactError: a file is missing, extra, truncated or changed, a
            weight's dtype or shape differs from the manifest, the manifest
            is of a newer format; the message names the file and the key. Or
            ``path`` is something else (an artifact, a converted directory): the message says what reads it.
        BundleMismatchError: ``params`` differ from the bundle's weights.
        MeshMismatchError: ``mesh``'s axes differ from the recorded ones.
        OSError: ``path`` is not a readable directory.
    """
    return wiring.bundle_loader().load(path, params=params, mesh=mesh, verify=verify,
                                       allowed_custom_calls=allowed_custom_calls)



def __getattr__(name: str) -> Any:
    # save_bundle on first use: a process that only loads never imports saving's modules (save,
    # examples, consumers, the safetensors writer: 3.4 ms of a fresh first answer
    # under -X importtime; tests/e2e/test_load_path_imports.py keeps them out).
    if name == "save_bundle":
        from jaxport.application.bundles.save import save_bundle

        globals()[name] = save_bundle
        return save_bundle
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
