"""How ``Exported.call`` runs: tree check, custom VJP, and the jitted fast path."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import jax

from ..adapters.jax_avals import tree_differences
from ..adapters import jax_autodiff  # noqa: F401  (registers the differentiation rules)
from ..adapters.jax_call import bind
from ..domain.errors import NonStringKeyError, TreeMismatchError
from .plain_trees import with_plain_library_nodes

if TYPE_CHECKING:
    from .exported import Exported


def make_caller(exp: Exported) -> Callable[..., Any]:
    """The function behind an eager ``exp.call``: a ``jax.jit`` of :func:`make_traced_caller`'s.

    An eager call takes JAX's C++ dispatch path (one cache lookup, no Python
    tracing) after the first call with a given signature; under an eager
    ``jax.grad`` or ``jax.vmap`` it is traced once per signature. The
    primitive's own rules differentiate and batch it (``adapters.jax_autodiff``).
    """
    return jax.jit(make_traced_caller(exp))


def make_traced_caller(exp: Exported) -> Callable[..., Any]:
    """The pytree-level call: the tree check, then the primitive bound on the leaves.

    ``exp.call`` runs it directly while a jaxpr is being staged (``jax.jit``,
    ``jax.eval_shape``, export): the primitive then joins the caller's trace,
    where a nested ``jax.jit`` would only add a second trace and a call.
    """
    target = exp.call_target

    def call(*args: Any, **kwargs: Any) -> Any:
        args_flat = check_tree(exp, args, kwargs)
        return exp.out_tree.unflatten(bind(target, args_flat))

    call.__name__ = f"call_exported_{exp.fun_name}"
    return call


def check_tree(exp: Exported, args: Any, kwargs: Any) -> list[Any]:
    """The flat leaves of ``(args, kwargs)`` if their tree is the exported one.

    Flax and Equinox objects match their plain containers (``plain_trees.py``),
    which keep their leaves' order: a loaded artifact takes the objects that
    were exported, an in-process export takes their plain form.

    Raises:
        TreeMismatchError: listing each structural difference by path.
    """
    args_flat, in_tree = jax.tree_util.tree_flatten((args, kwargs))
    if in_tree != exp.in_tree and not _same_plain_structure(in_tree, exp.in_tree):
        raise TreeMismatchError(exp.fun_name, tree_differences(in_tree, exp.in_tree))
    return args_flat


def _same_plain_structure(a: jax.tree_util.PyTreeDef, b: jax.tree_util.PyTreeDef) -> bool:
    try:
        return bool(with_plain_library_nodes(a) == with_plain_library_nodes(b))
    except NonStringKeyError:
        return False
