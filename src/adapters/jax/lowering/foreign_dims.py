"""Symbolic dimensions of another implementation (``jax.export``'s own), met at a call.

When a jaxport artifact is called while ``jax.export`` traces with its own
symbolic dimensions, the call's argument shapes hold objects jaxport's domain
does not know. Each distinct one stands in for a fresh variable of a private
scope while the domain solves the call; the output dimensions are then
evaluated back over the foreign objects with their own arithmetic. Foreign
constraints are not seen, so a check that needs them is reported as unproven
rather than assumed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import jax

from jaxport.adapters.jax import internals as jax_internals
from jaxport.domain.symbolic import PYTHON_OPS, DimExpr, SymbolicScope, parse_shape_spec


def is_foreign_dim(d: object) -> bool:
    """Whether ``d`` is a symbolic dimension that is not jaxport's."""
    return not isinstance(d, (int, DimExpr)) and hasattr(d, "dimension_as_value")


@dataclass
class ForeignDims:
    """The private variables that stand in for foreign dimensions."""

    scope: SymbolicScope = field(default_factory=SymbolicScope)
    variables: dict[Any, Any] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)

    def mirror(self, d: Any) -> Any:
        """The private variable for the foreign dimension ``d`` (ints pass through)."""
        if not is_foreign_dim(d):
            return d
        if d not in self.variables:
            # Named after the foreign text, so that messages read in the caller's terms.
            text = str(d)
            name = text if text.isidentifier() else f"({text})"
            self.variables[d] = DimExpr.variable(name, self.scope)
            self.values[name] = d
        return self.variables[d]

    def back(self, d: Any) -> Any:
        """A dimension over the private variables, as a foreign dimension."""
        if isinstance(d, DimExpr) and d.scope is self.scope:
            return d._evaluate(self.values, PYTHON_OPS)
        return d


def mirror_shapes(shapes: Sequence[tuple[Any, ...]]) -> tuple[list[tuple[Any, ...]], ForeignDims | None]:
    """The shapes with foreign dimensions replaced, and the replacement (None if none)."""
    if not any(is_foreign_dim(d) for s in shapes for d in s):
        return list(shapes), None
    foreign = ForeignDims()
    return [tuple(foreign.mirror(d) for d in s) for s in shapes], foreign


def translate_specs(specs: Any, expr_class: type[DimExpr]) -> Any:
    """``specs`` (a pytree of shaped values) with ``jax.export``'s dimensions as jaxport's.

    Every foreign dimension is re-read from its text in one jaxport scope that
    holds the foreign scope's constraints, so that exporting with
    ``jax.export.symbolic_shape`` dimensions behaves as with jaxport's.
    Leaves without foreign dimensions are returned unchanged.
    """
    leaves, treedef = jax.tree_util.tree_flatten(specs)
    foreign = [d for leaf in leaves for d in getattr(leaf, "shape", ()) if is_foreign_dim(d)]
    if not foreign:
        return specs
    scope = SymbolicScope(jax_internals.foreign_scope_constraints(getattr(foreign[0], "scope", None)))
    out = []
    for leaf in leaves:
        shape = getattr(leaf, "shape", ())
        if not any(is_foreign_dim(d) for d in shape):
            out.append(leaf)
            continue
        new_shape = parse_shape_spec(", ".join(str(d) for d in shape), scope=scope, expr_class=expr_class)
        out.append(jax.ShapeDtypeStruct(new_shape, leaf.dtype, sharding=getattr(leaf, "sharding", None),
                                        weak_type=getattr(leaf, "weak_type", False)))
    return jax.tree_util.tree_unflatten(treedef, out)
