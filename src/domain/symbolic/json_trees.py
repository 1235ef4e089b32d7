"""Symbolic dimensions and constraints as JSON expression trees, beside their text.

A converted directory's manifest writes every dimension both as text
(``"2*h + 1"``, as ``jax.export`` prints it) and as a tree that a reader in
another language evaluates without a parser:

* an integer is a JSON number: ``4``;
* a dimension variable is a JSON string: ``"h"``;
* an operation is ``{"op": OP, "args": [tree, ...]}`` with ``OP`` one of
  ``"+"`` and ``"*"`` (two or more arguments), ``"floordiv"``, ``"mod"``
  (floor division and its non-negative remainder, as Python's ``//`` and
  ``%``), ``"max"``, ``"min"`` (two arguments).

``2*h + 1`` is ``{"op": "+", "args": [{"op": "*", "args": [2, "h"]}, 1]}``.
A constraint is ``{"text": "b >= 16", "relation": ">=", "difference": tree}``:
the constraint holds when ``difference >= 0`` (``relation`` ``">="``) or
``difference == 0`` (``"=="``); ``b <= 8`` is recorded as ``8 - b >= 0``.

>>> shape_trees(["b", "2*h + 1", "4"], ["b >= 16"])
(['b', {'op': '+', 'args': [{'op': '*', 'args': [2, 'h']}, 1]}, 4], [{'text': 'b >= 16', 'relation': '>=', 'difference': {'op': '+', 'args': ['b', -16]}}])
>>> evaluate({"op": "+", "args": [{"op": "*", "args": [2, "h"]}, 1]}, {"h": 3})
7
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from jaxport.domain.errors import ArtifactError
from . import ConstraintError, DimExpr, ShapeSpecSyntaxError, SymbolicScope, parse_shape_spec
from .core import Poly
from .plan import Shape


def poly_tree(poly: Poly) -> Any:
    """The tree of one canonical polynomial."""
    terms: list[Any] = []
    for term, coeff in poly.terms:
        factors: list[Any] = [] if coeff == 1 else [coeff]
        for factor, power in term.factors:
            one = factor.var if factor.var is not None else {
                "op": factor.op, "args": [poly_tree(o) for o in factor.operands]}
            factors.extend([one] * power)
        terms.append(factors[0] if len(factors) == 1 else {"op": "*", "args": factors})
    if poly.const or not terms:
        terms.append(poly.const)
    return terms[0] if len(terms) == 1 else {"op": "+", "args": terms}


def dim_tree(dim: int | DimExpr) -> Any:
    """The tree of one dimension."""
    return dim if isinstance(dim, int) else poly_tree(dim.poly)


def shape_trees(dims_text: Sequence[str], constraints: Sequence[str]) -> tuple[list[Any], list[Any]]:
    """The trees of one shape's dimensions (as text) and of the constraints they live with.

    Raises:
        ArtifactError: a dimension or a constraint does not parse.
    """
    scope = constraint_scope(constraints)
    shape = parse_dims(dims_text, scope)
    return [dim_tree(d) for d in shape], constraint_trees(scope)


def constraint_trees(scope: SymbolicScope) -> list[Any]:
    """The trees of a scope's constraints."""
    return [{"text": c.text, "relation": c.comparison.value, "difference": dim_tree(c.difference)}
            for c in scope.constraints]


def constraint_scope(constraints: Sequence[str]) -> SymbolicScope:
    """A fresh scope that holds ``constraints`` (a table's, as recorded).

    Raises:
        ArtifactError: a constraint does not parse or cannot hold.
    """
    try:
        return SymbolicScope(tuple(constraints))
    except (ConstraintError, ShapeSpecSyntaxError) as exc:
        raise ArtifactError(f"The symbolic constraints {list(constraints)} are invalid: {exc}") from exc


def parse_dims(dims_text: Sequence[str], scope: SymbolicScope, expr_class: type[DimExpr] = DimExpr) -> Shape:
    """The dimensions recorded as ``dims_text`` (``"4"``, ``"b"``, ``"2*h + 1"``), built in ``scope`` as
    ``expr_class`` (an adapter's subclass).

    Raises:
        ArtifactError: a dimension does not parse.
    """
    if all(d.isdigit() or _is_variable(d) for d in dims_text):
        # What the parser gives for these dimensions, without tokenizing.
        return tuple(int(d) if d.isdigit() else expr_class.variable(d, scope) for d in dims_text)
    try:
        return parse_shape_spec(", ".join(dims_text), scope=scope, expr_class=expr_class)
    except ShapeSpecSyntaxError as exc:
        raise ArtifactError(f"The shape ({', '.join(dims_text)}) does not parse: {exc}") from exc


#: A dimension that is a lone variable name, as the shape parser's NAME token
#: (and not a name the parser reads as something else: an operation, ``_``).
_VARIABLE = re.compile(r"[^\W\d]\w*")
_NOT_VARIABLES = frozenset({"_", "floordiv", "mod", "max", "min"})


def _is_variable(dim: str) -> bool:
    return _VARIABLE.fullmatch(dim) is not None and dim not in _NOT_VARIABLES


_BINARY: dict[str, Callable[[int, int], int]] = {
    "floordiv": lambda a, b: a // b, "mod": lambda a, b: a % b, "max": max, "min": min}


def evaluate(tree: Any, env: Mapping[str, int]) -> int:
    """The value of a tree for the variables' values ``env`` (what a reader in another language does).

    Raises:
        KeyError: a variable has no value.
        ValueError: the tree is not one this module writes.
    """
    if isinstance(tree, int) and not isinstance(tree, bool):
        return tree
    if isinstance(tree, str):
        return env[tree]
    if not isinstance(tree, dict) or not isinstance(tree.get("args"), list):
        raise ValueError(f"not a dimension tree: {tree!r}")
    args = [evaluate(a, env) for a in tree["args"]]
    op = tree.get("op")
    if op == "+":
        return sum(args)
    if op == "*":
        return math.prod(args)
    if op in _BINARY and len(args) == 2:
        return _BINARY[op](args[0], args[1])
    raise ValueError(f"not a dimension tree: unknown operation {op!r}")
