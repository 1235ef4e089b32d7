"""What the command line needs of JAX: shape structures for ``jaxport export`` and ``jaxport warm``.

Imported only by the commands that export or compile, so the others run without JAX.
"""

from __future__ import annotations

from typing import Any

import jax

from jaxport.adapters.jax.exported.exported import Exported
from jaxport.domain.specs import ArraySpec


def to_struct(spec: ArraySpec) -> jax.ShapeDtypeStruct:
    """The ``jax.ShapeDtypeStruct`` of a parsed spec."""
    return jax.ShapeDtypeStruct(spec.shape, spec.dtype)


def structs_like(tree: Any) -> Any:
    """``tree`` with each array replaced by the ``jax.ShapeDtypeStruct`` of its shape and dtype."""
    return jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), tree)


def specs_after_weights(exported: Exported) -> tuple[list[Any], dict[str, Any]]:
    """The exported arguments after the first (a bundle's weights, given as arrays) and the
    keyword arguments, as ``jax.ShapeDtypeStruct`` of the exported (static) shapes."""
    structs = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in exported.in_avals]
    args, kwargs = jax.tree_util.tree_unflatten(exported.in_tree, structs)
    return list(args[1:]), dict(kwargs)
