"""Helpers of the symbolic-shape unit tests: dimensions parsed in a fresh scope (pure: no jax)."""

from __future__ import annotations

from jaxport.domain.symbolic import DimExpr, DimSize, SymbolicScope, parse_shape_spec


def dims(spec: str, *constraints: str) -> tuple[DimSize, ...]:
    """The dimensions of ``spec`` in a fresh scope with ``constraints``."""
    return parse_shape_spec(spec, scope=SymbolicScope(constraints))


def syms(spec: str, *constraints: str) -> tuple[DimExpr, ...]:
    """The dimensions of ``spec``, all symbolic, in a fresh scope with ``constraints``."""
    out = dims(spec, *constraints)
    assert all(isinstance(d, DimExpr) for d in out), out
    return out  # type: ignore[return-value]


def sym(spec: str, *constraints: str) -> DimExpr:
    """The single symbolic dimension of ``spec``."""
    (d,) = dims(spec, *constraints)
    assert isinstance(d, DimExpr), d
    return d
