"""Symbolic shapes for users: ``symbolic_shape``, ``symbolic_args_specs`` and friends.

The JAX-facing level of :mod:`jaxport.domain.symbolic`: the same dimensions,
built as the JAX adapter's :class:`~jaxport.adapters.jax.lowering.dims.JaxDim`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax

from jaxport.adapters.jax.lowering.dims import JaxDim
from jaxport.domain.symbolic import (
    ConstraintError, DimSize, Scope, ShapeSpecTypeError, SymbolicScope, is_symbolic_dim, parse_shape_spec
)

__all__ = ["SymbolicScope", "is_symbolic_dim", "poly_spec", "poly_specs",
           "symbolic_args_specs", "symbolic_shape"]


def _scope_for(constraints: Sequence[str], scope: Scope | None) -> Scope:
    if isinstance(constraints, str):
        raise ConstraintError(f"The symbolic constraints should be a sequence of strings. Got {constraints!r}")
    if scope is None:
        return SymbolicScope(tuple(constraints))
    if constraints:
        raise ValueError("Cannot specify both a `scope` and `constraints`.")
    return scope


def symbolic_shape(shape_spec: str | None, *, constraints: Sequence[str] = (),
                   scope: Scope | None = None,
                   like: Sequence[int | None] | None = None) -> tuple[DimSize, ...]:
    """Parses a shape with symbolic dimensions, as ``jax.export.symbolic_shape`` does.

    Args:
        shape_spec: e.g. ``"b, 2*h, _, ..."``: dimension expressions over
            variables with ``+ - *``, ``floordiv``, ``mod``, ``max``, ``min``;
            ``_`` takes the dimension from ``like``, ``...`` the rest of them.
            None means the static shape ``like``.
        constraints: e.g. ``("b >= 16", "h == 2*w")``, for a new scope.
        scope: the scope of the dimensions (instead of ``constraints``).
        like: the concrete shape for ``_`` and ``...``.

    Raises:
        ShapeSpecSyntaxError: the spec is malformed (the message shows where).
        ShapeSpecTypeError: the spec is neither None nor a string.
        ConstraintError: ``constraints`` is a string, or a constraint is malformed.
        ValueError: both ``scope`` and ``constraints`` are given.

    >>> symbolic_shape("b, 2*h + 1")
    (b, 2*h + 1)
    """
    the_scope = _scope_for(constraints, scope)
    if shape_spec is None:
        if like is None or any(d is None for d in like):
            raise ValueError("A shape spec of None needs a fully known `like` shape")
        return tuple(int(d) for d in like if d is not None)
    if not isinstance(shape_spec, str):
        raise ShapeSpecTypeError(shape_spec)
    return parse_shape_spec(shape_spec, scope=the_scope, like=like, expr_class=JaxDim)


def symbolic_args_specs(args: Any, shapes_specs: Any, constraints: Sequence[str] = (),
                        scope: Scope | None = None) -> Any:
    """``jax.ShapeDtypeStruct`` specs for ``args`` with symbolic shapes.

    Args:
        args: a pytree of arrays or ``ShapeDtypeStruct``s (for the structure,
            dtypes and the dimensions that ``_`` and ``...`` take).
        shapes_specs: None (all static), one spec string for every argument,
            or a pytree prefix of ``args`` with a spec (or None) per subtree.
        constraints, scope: as for :func:`symbolic_shape`; all arguments share
            one scope.

    Raises:
        ValueError: ``shapes_specs`` is not a prefix of ``args``'s structure.
    """
    the_scope = _scope_for(constraints, scope)
    leaves, treedef = jax.tree_util.tree_flatten(args)
    if isinstance(args, tuple) and isinstance(shapes_specs, list):
        shapes_specs = tuple(shapes_specs)  # the 2023 API took lists for argument tuples
    try:
        full = jax.tree.broadcast(shapes_specs, args, is_leaf=lambda x: x is None)
    except ValueError as exc:
        raise ValueError(f"symbolic_args_specs: shapes_specs must be a pytree prefix of args: {exc}") from None
    specs = jax.tree_util.tree_leaves(full, is_leaf=lambda x: x is None)
    result = []
    for leaf, spec in zip(leaves, specs, strict=True):
        shape, dtype = _shape_and_dtype(leaf)
        result.append(jax.ShapeDtypeStruct(symbolic_shape(spec, scope=the_scope, like=shape), dtype))
    return jax.tree_util.tree_unflatten(treedef, result)


def _shape_and_dtype(x: Any) -> tuple[tuple[int, ...], Any]:
    if isinstance(x, jax.ShapeDtypeStruct):
        return tuple(x.shape), x.dtype
    aval = jax.typeof(x)
    return tuple(aval.shape), aval.dtype


def poly_spec(arg_shape: Sequence[int | None], arg_dtype: Any, polymorphic_shape: str | None) -> jax.ShapeDtypeStruct:
    """The 2023 ``poly_spec``: a ``ShapeDtypeStruct`` with a symbolic shape."""
    return jax.ShapeDtypeStruct(symbolic_shape(polymorphic_shape, like=arg_shape), arg_dtype)


def poly_specs(args: Any, polymorphic_shapes: Any) -> Any:
    """The 2023 ``poly_specs``: :func:`symbolic_args_specs` without constraints."""
    return symbolic_args_specs(args, polymorphic_shapes)
