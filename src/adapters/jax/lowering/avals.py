"""Conversions between JAX abstract values / pytrees and domain specs."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import jax
from jax.core import ShapedArray

from jaxport.domain.errors import TreeDifference
from jaxport.domain.specs import ArraySpec
from jaxport.adapters.jax import internals as jax_internals


@functools.lru_cache(maxsize=256)
def _dtype_name(dtype: Any) -> str:
    """``str(dtype)``, kept per dtype: NumPy builds the name anew on every call."""
    return str(dtype)


def specs_of(avals: Sequence[ShapedArray]) -> tuple[ArraySpec, ...]:
    """The domain specs of several abstract values."""
    return tuple(ArraySpec(tuple(a.shape), _dtype_name(a.dtype), bool(a.weak_type)) for a in avals)


def args_kwargs_path(path: Sequence[Any]) -> str:
    """Names a leaf of the ``(args, kwargs)`` tree as JAX does: ``args[0]['w']``."""
    if not path:
        return "args"
    head = "args" if getattr(path[0], "idx", 0) == 0 else "kwargs"
    return head + jax.tree_util.keystr(tuple(path[1:]))


def leaf_paths(in_tree: jax.tree_util.PyTreeDef, leaves: Sequence[Any] | None = None) -> tuple[str, ...]:
    """The name of each flat argument of an ``(args, kwargs)`` tree.

    Custom nodes are rebuilt from ``leaves`` (the abstract values, so that a
    node whose auxiliary data must match its arrays' shapes rebuilds); where a
    node cannot be rebuilt, the arguments are named by flat position.
    """
    try:
        rebuilt = in_tree.unflatten(list(leaves) if leaves is not None else [0] * in_tree.num_leaves)
        with_paths, _ = jax.tree_util.tree_flatten_with_path(rebuilt)
    except Exception:  # a custom node's unflatten refused these leaves: JAX does not name them either
        return tuple(f"args-flat[{i}]" for i in range(in_tree.num_leaves))
    return tuple(args_kwargs_path(p) for p, _ in with_paths)


def tree_differences(actual: jax.tree_util.PyTreeDef,
                     expected: jax.tree_util.PyTreeDef) -> tuple[TreeDifference, ...]:
    """Each structural difference of two ``(args, kwargs)`` trees, by path."""
    a = actual.unflatten([0] * actual.num_leaves)
    e = expected.unflatten([0] * expected.num_leaves)
    return tuple(TreeDifference(args_kwargs_path(path), thing1, thing2, explanation)
                 for path, thing1, thing2, explanation in jax_internals.tree_equality_errors(a, e))
