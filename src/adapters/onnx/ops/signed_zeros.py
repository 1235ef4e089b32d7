"""What the translations know of a value's zero signs, and selections that keep a ``-0.0``.

ONNX Runtime's CPU ``Where`` (1.32, float16/32/64 alike, whatever the
broadcasting) selects ``X = condition ? x : 0`` and ``Y = condition ? 0 : y``
and merges them as ``X != 0 ? X : Y``: a zero of its *first* branch, of
either sign, comes out ``+0.0``; its second branch comes out exactly
(microsoft/onnxruntime#32191). Its ``Max`` and ``Min`` return the second
operand on a tie of zeros, where XLA orders ``-0 < +0`` (``max(-0, +0)`` is
``+0``, ``min(+0, -0)`` is ``-0``, in either order). The helpers here read
the graph built so far (constants, producers) to put a value that cannot be
``-0.0`` where it costs nothing, and otherwise to swap branches under a
negation already at hand: no operation is added where none is needed (a
``maximum`` or ``minimum`` of two variables alone takes three or four).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxport.adapters.onnx.builder import GraphBuilder


#: Operators whose result is never ``-0.0`` (``Exp``, ``Sigmoid`` may underflow to ``+0.0``, ``Log`` is 0 at 1).
_NEVER_NEGATIVE_ZERO = frozenset({"Abs", "Exp", "Sigmoid", "Softplus", "Log", "Range", "Shape", "Size"})
#: Operators that pass the zeros of their first input through unchanged.
_PASS_THROUGH = frozenset({"Expand", "Reshape", "Identity", "Unsqueeze", "Squeeze", "Transpose", "Flatten"})
#: Elementwise operators whose result is NaN wherever one of their inputs is.
_NAN_PROPAGATING = frozenset({"Add", "Sub", "Mul", "Div", "Neg", "Abs", "Exp", "Log", "Floor", "Ceil", "Round",
                              "Sqrt", "Reciprocal", "Sin", "Cos", "Tan", "Tanh", "Sinh", "Cosh", "Atan", "Asin",
                              "Acos", "Erf", "Sigmoid", "Max", "Min"})
#: A comparison and its complement where neither operand is NaN.
_COMPLEMENT = {"Less": "GreaterOrEqual", "GreaterOrEqual": "Less", "Greater": "LessOrEqual",
               "LessOrEqual": "Greater"}


def known(b: GraphBuilder, name: str) -> np.ndarray | None:
    """The value of ``name`` where the graph holds it as a constant (a splat broadcast included)."""
    value = b.known.get(name)
    node = b.producers.get(name)
    if value is None and node is not None and node.op_type in _PASS_THROUGH and len(node.input) >= 1:
        inner = known(b, node.input[0])
        value = inner if inner is not None and inner.size == 1 else None
    return value


def may_be_negative_zero(b: GraphBuilder, name: str) -> bool:
    """Whether ``name`` may hold ``-0.0`` (false only where the graph shows it cannot)."""
    value = known(b, name)
    if value is not None:
        return value.dtype.kind == "f" and bool(np.any((value == 0) & np.signbit(value)))
    node = b.producers.get(name)
    if node is None:
        return True
    if node.op_type in _NEVER_NEGATIVE_ZERO:
        return False
    if node.op_type == "Add":  # a + b is -0.0 only for -0.0 + -0.0 (x + -x is +0.0)
        return all(may_be_negative_zero(b, i) for i in node.input)
    if node.op_type == "Sub":  # -0.0 - +0.0 only (not v - trunc(v): a zero v's trunc is v)
        return (may_be_negative_zero(b, node.input[0]) and may_be_positive_zero(b, node.input[1])
                and not _keeps_zero_of(b, node.input[1], node.input[0]))
    if node.op_type == "Where":  # (a -0.0 of the first branch comes out +0.0 today; not relied on)
        return any(may_be_negative_zero(b, i) for i in node.input[1:])
    return node.op_type not in _PASS_THROUGH or may_be_negative_zero(b, node.input[0])


def _keeps_zero_of(b: GraphBuilder, name: str, v: str, depth: int = 8) -> bool:
    """Whether ``name`` is ``v`` itself wherever ``v`` is a zero: ``v``, its ``Floor``, ``Ceil`` or ``Round``,
    or the second branch of a ``Where`` under ``v > 0`` or ``v < 0`` (false at a zero, and ONNX Runtime's
    second branch comes out exactly), of such a value."""
    if name == v:
        return True
    node = b.producers.get(name)
    if node is None or depth == 0:
        return False
    if node.op_type in ("Floor", "Ceil", "Round"):
        return _keeps_zero_of(b, node.input[0], v, depth - 1)
    if node.op_type != "Where":
        return False
    compare = b.producers.get(node.input[0])
    return (compare is not None and compare.op_type in ("Greater", "Less") and compare.input[0] == v
            and _is_zero(b, compare.input[1]) and _keeps_zero_of(b, node.input[2], v, depth - 1))


def _is_zero(b: GraphBuilder, name: str) -> bool:
    constant = known(b, name)
    return constant is not None and bool(np.all(constant == 0))


def may_be_positive_zero(b: GraphBuilder, name: str) -> bool:
    """Whether ``name`` may hold ``+0.0`` (false only for a constant without it)."""
    value = known(b, name)
    return value is None or bool(np.any((value == 0) & ~np.signbit(value)))


def negation(b: GraphBuilder, condition: str) -> str | None:
    """The logical negation of ``condition`` where the graph already holds it (``condition`` is a ``Not``)."""
    node = b.producers.get(condition)
    return str(node.input[0]) if node is not None and node.op_type == "Not" else None


def nan_follows(b: GraphBuilder, name: str, sources: set[str], depth: int = 24,
                memo: dict[str, bool] | None = None) -> bool:
    """Whether ``name`` is NaN wherever one of ``sources`` is (it is one, or an elementwise function of one,
    within ``depth`` operators); to follow each of several values, ask for each alone."""
    memo = {} if memo is None else memo
    if name in sources:
        return True
    if name in memo:
        return memo[name]
    memo[name] = False  # (a graph has no cycles; this only bounds the work)
    node = b.producers.get(name)
    if node is None or depth == 0:
        return False
    if node.op_type == "Where":
        inputs, need_all = list(node.input[1:]), True
    elif node.op_type in _PASS_THROUGH:
        inputs, need_all = list(node.input[:1]), False
    elif node.op_type in _NAN_PROPAGATING:
        inputs, need_all = list(node.input), False
    else:
        return False
    found = [nan_follows(b, i, sources, depth - 1, memo) for i in inputs]
    memo[name] = all(found) if need_all else any(found)
    return memo[name]


def select(b: GraphBuilder, condition: str, x: str, y: str) -> str:
    """``Where(condition, x, y)`` of floats, with a ``-0.0`` of ``x`` kept where that costs no operation.

    Where ``x`` may be ``-0.0`` and ``y`` cannot be (where it is selected), the branches swap under
    a negation the graph holds, or under the complement of the comparison
    that made ``condition`` where both branches are NaN wherever an operand
    of the comparison is (there the two comparisons differ); under an
    ``Equal``, whose complement no comparison gives (and whose ``Not`` ONNX
    Runtime fuses into the ``Where``, swapping it back), under
    ``Xor(condition, true)``: one operation, only there (JAX 0.12.1's
    ``modf``, ``isinf(x) ? copysign(0, x) : x - trunc(x)``, takes it).
    """
    if not may_be_negative_zero(b, x):
        return b.one("Where", [condition, x, y])
    node = b.producers.get(condition)
    if node is not None and _is_trunc(b, node, x, y):
        floor, ceil = (x, y) if node.op_type == "GreaterOrEqual" else (y, x)
        return b.one("Where", [b.one("Greater", list(node.input)), floor, ceil])
    flipped = _flipped(b, condition, x, y)
    if flipped is not None:
        return b.one("Where", [flipped, y, x])
    return b.one("Where", [condition, x, y])


def _flipped(b: GraphBuilder, condition: str, x: str, y: str) -> str | None:
    node = b.producers.get(condition)
    if node is None:
        return None
    if may_be_negative_zero(b, y) and not _zero_only_off(b, node, y):
        return None
    negated = negation(b, condition)
    if negated is not None:
        return negated
    if node.op_type in _COMPLEMENT and all(nan_follows(b, v, {s}) for s in _maybe_nan(b, node.input)
                                           for v in (x, y)):
        return b.one(_COMPLEMENT[node.op_type], list(node.input))
    if node.op_type == "Equal":  # no comparison is its complement; a Not ONNX Runtime would fuse back
        return b.one("Xor", [condition, b.scalar(True, np.dtype(np.bool_))])
    return None


def _maybe_nan(b: GraphBuilder, names: Sequence[str]) -> list[str]:
    """Those of ``names`` that may hold NaN (all but constants without it)."""
    known_values = [known(b, n) for n in names]
    return [n for n, v in zip(names, known_values) if v is None or (v.dtype.kind == "f" and bool(np.any(np.isnan(v))))]


def _zero_only_off(b: GraphBuilder, compare: Any, y: str) -> bool:
    """Whether the complement of ``compare`` (``v >= 0`` or ``v <= 0``) selects ``y`` only where ``v`` is not
    zero, and ``y`` is zero only where ``v`` is (``v``, ``-v``, ``v`` times a constant without zeros; a factor
    below 1 can round a subnormal ``v`` to a zero, but XLA's CPU flushes subnormals to zero there anyway)."""
    if compare.op_type not in ("GreaterOrEqual", "LessOrEqual"):
        return False
    v, zero = compare.input
    if not _is_zero(b, zero):
        return False
    node = b.producers.get(y)
    if y == v or (node is not None and node.op_type == "Neg" and node.input[0] == v):
        return True
    if node is None or node.op_type != "Mul" or v not in node.input:
        return False
    factor = known(b, node.input[1] if node.input[0] == v else node.input[0])
    return factor is not None and bool(np.all(factor != 0))


def _is_trunc(b: GraphBuilder, compare: Any, x: str, y: str) -> bool:
    """``Where(v < 0, Ceil(v), Floor(v))`` (JAX's ``trunc``; ``<=``, or ``>=`` with the branches the other way,
    alike): the branches agree where ``v`` is 0 or NaN, so ``Where(v > 0, Floor(v), Ceil(v))`` selects the same
    values, with ``Floor`` first only where it is +0.0 or not 0."""
    if len(compare.input) != 2:
        return False
    v, zero = compare.input
    first, second = b.producers.get(x), b.producers.get(y)
    if not _is_zero(b, zero) or first is None or second is None:
        return False
    kinds = {"Less": ("Ceil", "Floor"), "LessOrEqual": ("Ceil", "Floor"), "GreaterOrEqual": ("Floor", "Ceil")}
    return (kinds.get(compare.op_type) == (first.op_type, second.op_type)
            and list(first.input) == list(second.input) == [v])


def ordered(b: GraphBuilder, op_type: str, x: str, y: str) -> list[str] | None:
    """The operands of a float ``Max`` or ``Min`` in an order whose tie of zeros gives XLA's answer where the
    graph shows one does (``Max(a, b)`` errs only at ``a = +0, b = -0``, ``Min(a, b)`` at ``a = -0, b = +0``),
    else None."""
    first, second = (may_be_positive_zero, may_be_negative_zero) if op_type == "Max" else (
        may_be_negative_zero, may_be_positive_zero)
    if not first(b, x) or not second(b, y):
        return [x, y]
    if not first(b, y) or not second(b, x):
        return [y, x]
    return None


def min_max(b: GraphBuilder, op_type: str, x: str, y: str, dtype: np.dtype[Any]) -> str:
    """XLA's ``maximum``/``minimum`` of floats ``x`` and ``y`` (NaN propagated, ``-0 < +0``).

    Where no order of the operands is right on every tie of zeros, the
    zero's sign is mended by adding a zero of ``x``'s sign (``Tanh`` keeps
    -0.0 and maps the infinities to +-1, so the zero is never NaN):
    ``Max(x, y) + tanh(x) * 0`` is +0.0 at ``(+0, -0)`` and leaves every other
    result as it is; for ``Min`` the same in negation,
    ``-(tanh(x) * -0 - Min(x, y))``. Three or four operations, only there.
    """
    order = ordered(b, op_type, x, y)
    if order is not None:
        return b.one(op_type, order)
    extreme, tanh = b.one(op_type, [x, y]), b.one("Tanh", [x])
    if op_type == "Max":
        return b.one("Add", [extreme, b.one("Mul", [tanh, b.scalar(0.0, dtype)])])
    return b.one("Neg", [b.one("Sub", [b.one("Mul", [tanh, b.scalar(-0.0, dtype)]), extreme])])
