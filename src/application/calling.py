"""How ``Exported.call`` runs: tree check, custom VJP, and the jitted fast path."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import jax

from ..adapters.jax_avals import tree_differences
from ..adapters import jax_autodiff  # noqa: F401  (registers the differentiation rules)
from ..adapters.jax_call import bind
from ..domain.errors import TreeMismatchError

if TYPE_CHECKING:
    from .exported import Exported


def make_caller(exp: Exported) -> Callable[..., Any]:
    """The function behind ``exp.call``.

    It is a ``jax.jit`` of the pytree-level call, so an eager call takes JAX's
    C++ dispatch path (one cache lookup, no Python tracing) after the first
    call with a given signature; inside a transformation it inlines. The
    primitive's own rules differentiate and batch it (``adapters.jax_autodiff``).
    """
    target = exp.call_target

    def call(*args: Any, **kwargs: Any) -> Any:
        args_flat = check_tree(exp, args, kwargs)
        return exp.out_tree.unflatten(bind(target, args_flat))

    call.__name__ = f"call_exported_{exp.fun_name}"
    return jax.jit(call)


def check_tree(exp: Exported, args: Any, kwargs: Any) -> list[Any]:
    """The flat leaves of ``(args, kwargs)`` if their tree is the exported one.

    Raises:
        TreeMismatchError: listing each structural difference by path.
    """
    args_flat, in_tree = jax.tree_util.tree_flatten((args, kwargs))
    if in_tree != exp.in_tree:
        raise TreeMismatchError(exp.fun_name, tree_differences(in_tree, exp.in_tree))
    return args_flat
