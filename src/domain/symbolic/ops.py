"""Evaluating symbolic dimensions over any kind of value.

:func:`evaluate` computes a polynomial from the values of its variables with
the operations of a :class:`DimOps` object. The default, :data:`PYTHON_OPS`,
uses Python's operators (floor division and modulo, as Python defines them)
and works for ``int`` values and for symbolic dimensions. The JAX adapter
passes operations that build ``lax`` values (``lax.max`` for ``max``, so that
shape refinement can fold it) and the IR emitter passes operations that
build StableHLO ops.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import Any, Final, Protocol

from .core import FLOORDIV, MAX, MIN, MOD, Factor, Poly, Term
from ..jax_docs import DocPages
from jaxport.domain.errors import DimensionEvaluationError


class DimOps(Protocol):
    """The arithmetic that evaluation needs, over some value type.

    ``floordiv`` and ``mod`` must follow Python's semantics (rounding towards
    minus infinity; the remainder has the sign of the divisor).
    """

    def constant(self, value: int) -> Any:
        """The value of an integer constant."""
        ...

    def add(self, x: Any, y: Any) -> Any:
        """``x + y``."""
        ...

    def mul(self, x: Any, y: Any) -> Any:
        """``x * y``."""
        ...

    def floordiv(self, x: Any, y: Any) -> Any:
        """``x // y``."""
        ...

    def mod(self, x: Any, y: Any) -> Any:
        """``x % y``."""
        ...

    def max(self, x: Any, y: Any) -> Any:
        """The larger of ``x`` and ``y``."""
        ...

    def min(self, x: Any, y: Any) -> Any:
        """The smaller of ``x`` and ``y``."""
        ...


class PythonOps:
    """Python operators; ``max``/``min`` of symbolic dimensions stay symbolic."""

    def constant(self, value: int) -> Any:
        """Returns ``value``."""
        return value

    def add(self, x: Any, y: Any) -> Any:
        """``x + y``."""
        return x + y

    def mul(self, x: Any, y: Any) -> Any:
        """``x * y``."""
        return x * y

    def floordiv(self, x: Any, y: Any) -> Any:
        """``x // y``."""
        return x // y

    def mod(self, x: Any, y: Any) -> Any:
        """``x % y``."""
        return x % y

    def max(self, x: Any, y: Any) -> Any:
        """``max(x, y)``, as ``x.max(y)`` or ``y.rmax(x)`` for symbolic operands."""
        return _extremum(x, y, builtins.max, "max")

    def min(self, x: Any, y: Any) -> Any:
        """``min(x, y)``, as ``x.min(y)`` or ``y.rmin(x)`` for symbolic operands."""
        return _extremum(x, y, builtins.min, "min")


class PolyOps(PythonOps):
    """Polynomials as they are written: no rule of a scope, no simplification of operations
    (Python's ``+`` and ``*`` of polynomials, the other operations kept opaque)."""

    def constant(self, value: int) -> Poly:
        """``value`` as a constant polynomial."""
        return Poly.constant(value)

    def floordiv(self, x: Poly, y: Poly) -> Poly:
        """``floordiv(x, y)``, kept as an operation."""
        return Poly.of_factor(Factor.operation(FLOORDIV, x, y))

    def mod(self, x: Poly, y: Poly) -> Poly:
        """``mod(x, y)``, kept as an operation."""
        return Poly.of_factor(Factor.operation(MOD, x, y))

    def max(self, x: Poly, y: Poly) -> Poly:
        """``max(x, y)``, kept as an operation."""
        return Poly.of_factor(Factor.operation(MAX, x, y))

    def min(self, x: Poly, y: Poly) -> Poly:
        """``min(x, y)``, kept as an operation."""
        return Poly.of_factor(Factor.operation(MIN, x, y))


def _is_dim(x: Any) -> bool:
    # Symbolic dimensions have rmax; arrays have a reducing .max() and must not get here.
    return hasattr(type(x), "rmax")


def _extremum(x: Any, y: Any, builtin: Any, name: str) -> Any:
    if isinstance(x, int) and isinstance(y, int):
        return builtin(x, y)
    if _is_dim(x) and (isinstance(y, int) or _is_dim(y)):
        return getattr(x, name)(y)
    if isinstance(x, int) and _is_dim(y):
        return getattr(y, "r" + name)(x)
    raise TypeError(
        f"PythonOps cannot compute {name}({x!r}, {y!r}); "
        "pass DimOps for this kind of value (e.g. lax.max for JAX values)")


PYTHON_OPS: Final = PythonOps()
POLY_OPS: Final = PolyOps()


def evaluate(p: Poly, env: Mapping[str, Any], ops: DimOps, docs: DocPages) -> Any:
    """The value of ``p`` when each variable ``v`` has the value ``env[v]``.

    Raises:
        DimensionEvaluationError: a variable of ``p`` is missing from ``env`` (its message cites ``docs``).
    """
    return _Evaluator(env, ops, docs).poly(p)


class _Evaluator:
    def __init__(self, env: Mapping[str, Any], ops: DimOps, docs: DocPages) -> None:
        self.env = env
        self.ops = ops
        self.docs = docs
        self.memo: dict[Factor, Any] = {}

    def poly(self, p: Poly) -> Any:
        ops = self.ops
        total: Any = None
        for t, c in p.terms:
            value = self.term(t)
            if c != 1:
                value = ops.mul(value, ops.constant(c))
            total = value if total is None else ops.add(total, value)
        if p.const or total is None:
            k = ops.constant(p.const)
            total = k if total is None else ops.add(total, k)
        return total

    def term(self, t: Term) -> Any:
        total: Any = None
        for f, e in t.factors:
            value = self.factor(f)
            for _ in range(e):
                total = value if total is None else self.ops.mul(total, value)
        return total

    def factor(self, f: Factor) -> Any:
        if f in self.memo:
            return self.memo[f]
        if f.var is not None:
            if f.var not in self.env:
                raise DimensionEvaluationError.unknown_variable(f.var, list(self.env), self.docs)
            value = self.env[f.var]
        else:
            left, right = (self.poly(o) for o in f.operands)
            operation = {FLOORDIV: self.ops.floordiv, MOD: self.ops.mod,
                         MAX: self.ops.max, MIN: self.ops.min}[f.op or ""]
            value = operation(left, right)
        self.memo[f] = value
        return value
