"""The checks of an exported function's arguments that run before its primitive is bound.

The tree check of every call (:func:`flat_arguments`), and the dtype check
that explains a ``TypeError`` raised by ``jax.jit`` before the tree check ran
(:func:`check_dtypes`). The primitive checks ranks, shapes and dimension
variables (:mod:`jaxport.adapters.jax.exported.call`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax

from jaxport.adapters.jax.lowering.avals import tree_differences
from jaxport.adapters.jax.exported.call import CallTarget
from jaxport.domain.errors import DtypeMismatchError, NonStringKeyError, TreeMismatchError
from jaxport.adapters.jax.trees.plain import with_plain_library_nodes


def flat_arguments(fun_name: str, exported_tree: jax.tree_util.PyTreeDef, args: Any, kwargs: Any) -> list[Any]:
    """The flat leaves of ``(args, kwargs)`` if their tree is ``exported_tree``.

    Flax and Equinox objects match their plain containers (``plain_trees.py``),
    which keep their leaves' order: a loaded artifact takes the objects that
    were exported, an in-process export takes their plain form.

    Raises:
        TreeMismatchError: listing each structural difference by path.
    """
    args_flat, in_tree = jax.tree_util.tree_flatten((args, kwargs))
    if in_tree != exported_tree and not _same_plain_structure(in_tree, exported_tree):
        raise TreeMismatchError(fun_name, tree_differences(in_tree, exported_tree))
    return args_flat


def check_dtypes(target: CallTarget, leaves: Sequence[Any]) -> None:
    """Raises DtypeMismatchError for the first leaf with a dtype other than the exported one."""
    for path, spec, leaf in zip(target.arg_paths, target.in_specs, leaves):
        dtype = getattr(leaf, "dtype", None)
        if dtype is not None and str(dtype) != spec.dtype:
            raise DtypeMismatchError(path, spec.dtype, str(dtype))


def _same_plain_structure(a: jax.tree_util.PyTreeDef, b: jax.tree_util.PyTreeDef) -> bool:
    try:
        return bool(with_plain_library_nodes(a) == with_plain_library_nodes(b))
    except NonStringKeyError:
        return False
