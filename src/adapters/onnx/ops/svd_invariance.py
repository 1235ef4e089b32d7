"""Whether a module's results provably do not depend on the convention of its SVDs' singular vectors.

LAPACK's ``gesdd`` (``mode`` ``'S'``; ``'A'`` only where ``m == n``) gives
``A = U diag(s) VT``; the vectors are not unique: ``U -> U Q``,
``VT -> Q^T VT`` for any orthogonal ``Q`` that commutes with ``diag(s)``
(a sign per pair, a rotation inside a block of equal values), and where
``s_i = 0`` the columns ``u_i`` and ``v_i`` are free apart (any orthonormal
completion). ``pinv`` (``VT^T diag(1/s) U^T`` with a cutoff) and ``lstsq``
(``VT^T (s_inv * (U^T b))``) use them only in ways that cancel that
freedom. :func:`invariant_svds` proves it by an abstract interpretation of
the module from its public functions (through private ``func.call``\\ s, each
call apart), tracking for every value one of:

- :class:`Carrier`: linear in one call's ``U`` or ``V`` with ``Q`` acting
  on one axis (``axis``), the call's batch dimensions at ``batch``, and
  ``killed`` once its columns of ``s_i = 0`` are multiplied by zero;
- :class:`Spectral`: free of ``Q`` and, along ``axis``, an elementwise
  function of ``s_i`` (and of values constant along that axis), with
  ``zero`` its value where ``s_i = 0`` (and ``info = 0``) when known;
- :class:`Free`: free of ``Q``, constant along the axes ``constant``, with
  ``zero`` its value in that case when known (``exact``: whatever ``s``);
- :data:`TAINTED`: anything else that may depend on ``Q``.

A carrier passes through ``transpose``, ``convert``, ``reshape`` adding or
dropping axes of size 1, ``broadcast_in_dim``, ``select`` with a predicate
constant along ``axis`` and a fill of NaN or zero (JAX's ``info`` mask),
``add``/``subtract`` of two alike, ``negate``, ``multiply``/``divide`` by a
spectral value of its call or a value constant along ``axis``, and
``dot_general`` with a ``Q``-free operand contracting neither ``axis`` nor a
batch axis. ``dot_general`` of two carriers of one call contracting both
``axis`` (batch axes paired), one killed, is ``Q``-free (``U diag(d) V^T``,
``d`` constant on each block of equal ``s_i``, zero where ``s_i = 0``).
Anything else a carrier reaches is tainted; a public function returning a
tainted value, an operation without results reading one, or a region holding
a call or an SVD (not followed) fails the proof. So ``U^T U`` (invariant too) is refused: it carries ``Q`` twice.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Union

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from jaxport.adapters.onnx.builder import int_list, tensor_shape
from .common import direction, function_named, is_private, module_of, nested, operation, splat_value
from .lapack import backend_config

#: The SVD custom calls whose vectors this proof concerns.
GESDD = ("lapack_sgesdd_ffi", "lapack_dgesdd_ffi")
_NONNEG = "nonnegative"  # a ``zero`` known only to be >= 0
Zero = Union[float, bool, str, None]


@dataclass(frozen=True)
class _Placed:
    call: int
    axis: int
    batch: tuple[int | None, ...]


@dataclass(frozen=True)
class Carrier(_Placed):
    killed: bool = False


@dataclass(frozen=True)
class Spectral(_Placed):
    zero: Zero = None
    plain: bool = False  # ``s`` itself (nonnegative where ``info = 0``)


@dataclass(frozen=True)
class Free:
    constant: frozenset[int]
    zero: Zero = None
    exact: bool = False


class _Tainted:
    pass


TAINTED = _Tainted()
Value = Union[Carrier, Spectral, Free, _Tainted]
_ELEMENTWISE = {"stablehlo." + n for n in (
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "compare", "select", "and", "or", "not",
    "negate", "abs", "sqrt", "rsqrt", "convert", "power", "exponential", "log", "sign", "clamp")}
#: Operations that move axes (their first operand's; the others, shapes, are ``Q``-free).
_MOVES = ("stablehlo.broadcast_in_dim", "stablehlo.dynamic_broadcast_in_dim", "stablehlo.transpose",
          "stablehlo.reshape")
#: Operations whose results are some of their first operand's elements (of ``s``: nonnegative where ``info = 0``).
_PARTS = ("stablehlo.slice", "stablehlo.reshape", "stablehlo.gather", "stablehlo.dynamic_gather",
          "stablehlo.dynamic_slice")


def _shape(value: Any) -> list[int | None]:
    return list(tensor_shape(value)) if isinstance(value.type, ir.RankedTensorType) else []


def _ones(value: Any) -> frozenset[int]:
    return frozenset(i for i, d in enumerate(_shape(value)) if d == 1)


def _arithmetic(name: str, x: list[float], op: Any) -> Zero:
    with np.errstate(all="ignore"):
        if name == "compare":
            if "compare_type" in op.attributes and "TOTALORDER" in str(op.attributes["compare_type"]):
                return None  # -0 < +0 and NaN == NaN there: Python's comparisons would fold it wrong
            return {"EQ": x[0] == x[1], "NE": x[0] != x[1], "GT": x[0] > x[1], "GE": x[0] >= x[1],
                    "LT": x[0] < x[1], "LE": x[0] <= x[1]}.get(direction(op))
        if name == "convert":
            floating = isinstance(ir.RankedTensorType(op.results[0].type).element_type, ir.FloatType)
            return x[0] if floating or float(x[0]).is_integer() else None
        y = np.array(x, np.float64)
        table = {"add": y[0] + y[-1], "subtract": y[0] - y[-1], "multiply": y[0] * y[-1], "divide": y[0] / y[-1],
                 "maximum": np.max(y), "minimum": np.min(y), "negate": -y[0], "abs": abs(y[0]), "sqrt": np.sqrt(y[0])}
        result = table.get(name)
        return None if result is None else float(result)


def _zero(name: str, args: Sequence[Zero], op: Any) -> Zero:
    """The value of an elementwise ``name`` on ``args`` where each is known (a number, a boolean), known to be
    nonnegative and finite (:data:`_NONNEG`) or unknown (None)."""
    if name == "select":
        pred, x, y = args
        if isinstance(pred, bool):
            return x if pred else y
        return x if x == y and x is not None else None
    if name in ("and", "or", "not"):
        if name != "not" and any(a is (name == "or") for a in args):  # `is`: True == 1.0 for an integer 1
            return name == "or"
        if not all(isinstance(a, bool) for a in args):
            return None
        return {"and": all(args), "or": any(args), "not": not args[0]}[name]
    if any(a == _NONNEG for a in args):
        if name in ("multiply", "add", "maximum", "abs", "sqrt") and all(
                a == _NONNEG or (isinstance(a, float) and 0 <= a < math.inf) for a in args):
            return _NONNEG
        if name == "compare" and args[0] == 0.0 and args[1] == _NONNEG and direction(op) == "GT":
            return False  # 0 > a nonnegative value
        return None
    numbers = [a for a in args if isinstance(a, (int, float)) and not isinstance(a, bool)]
    return _arithmetic(name, [float(a) for a in numbers], op) if len(numbers) == len(args) else None


class _Analysis:
    def __init__(self) -> None:
        self.calls = 0
        self.failed = False
        self.proven: list[Any] = []

    def run_function(self, function: Any, args: Sequence[Value]) -> list[Value]:
        values: dict[Any, Value] = dict(zip(list(function.regions[0].blocks[0].arguments), args))
        for op in function.regions[0].blocks[0].operations:
            op = operation(op)
            if op.name == "func.return":
                return [values.get(v, TAINTED) for v in op.operands]
            results = self.step(op, [values.get(v, TAINTED) for v in op.operands], values)
            values.update(zip(list(op.results), results))
        return []

    def step(self, op: Any, ins: list[Value], values: dict[Any, Value]) -> list[Value]:
        name = op.name
        if name == "func.call":
            callee = function_named(op, ir.FlatSymbolRefAttr(op.attributes["callee"]).value)
            return self.run_function(callee, ins) if callee is not None else [TAINTED] * len(op.results)
        if name == "stablehlo.custom_call" and ir.StringAttr(op.attributes["call_target_name"]).value in GESDD:
            return self.gesdd(op)
        if name == "stablehlo.constant":
            splat = splat_value(op.results[0])
            zero = float(splat) if isinstance(splat, (int, float)) and not isinstance(splat, bool) else splat
            return [Free(frozenset(range(len(_shape(op.results[0])))) if splat is not None else _ones(op.results[0]),
                         zero, True)]
        self.failed |= _calls_inside(op)  # a call in a region is not followed: its SVDs' vectors are not proven
        carriers = any(isinstance(v, (Carrier, _Tainted)) for v in ins) or _captures(op, values)
        if not carriers:
            return [self.free(op, ins, r) for r in op.results]
        self.failed |= not len(op.results)
        result = self.carry(op, ins)
        return [result] if result is not None else [TAINTED] * len(op.results)

    def gesdd(self, op: Any) -> list[Value]:
        shape = _shape(op.operands[0])
        m, n = shape[-2:]
        mode = backend_config(op).get("mode", ord("A"))
        self.calls += 1
        call, rank = self.calls, len(shape)
        batch = tuple(None if d == 1 else i for i, d in enumerate(shape[:-2]))
        vectors = mode == ord("S") or (mode == ord("A") and m == n and m is not None)
        if vectors:
            self.proven.append(op)
        u, vt = (Carrier(call, rank - 1, batch), Carrier(call, rank - 2, batch)) if vectors else (TAINTED, TAINTED)
        return [TAINTED, Spectral(call, rank - 2, batch, 0.0, True), u, vt, Free(_ones(op.results[4]), 0.0)]

    def free(self, op: Any, ins: list[Value], result: Any) -> Value:
        """A ``Q``-free result, or a spectral one where a spectral operand passes elementwise."""
        name, constant = op.name, _ones(result)
        spectral = [v for v in ins if isinstance(v, Spectral)]
        if name in _ELEMENTWISE and all(isinstance(v, (Spectral, Free)) for v in ins):
            zero = _zero(name.split(".")[1], [v.zero for v in ins], op)  # type: ignore[union-attr]
            if not spectral:
                free = [v for v in ins if isinstance(v, Free)]
                axes = frozenset.intersection(*[v.constant for v in free]) if free else constant
                return Free(axes | constant, zero, all(v.exact for v in free))
            first = spectral[0]
            if all((v.call, v.axis, v.batch) == (first.call, first.axis, first.batch) if isinstance(v, Spectral)
                   else isinstance(v, Free) and first.axis in v.constant for v in ins):
                return Spectral(first.call, first.axis, first.batch, zero, name == "stablehlo.select" and _masked(ins))
            return Free(constant)
        if name in _MOVES and ins:
            (v,) = ins[:1]
            moved = _moved(op)
            if isinstance(v, Spectral):
                axis, batch = moved.get(v.axis), tuple(None if b is None else moved.get(b) for b in v.batch)
                if axis is not None and all(b is not None for b, o in zip(batch, v.batch) if o is not None):
                    return Spectral(v.call, axis, batch, v.zero, v.plain)
                return Free(constant, _NONNEG if v.plain else None)
            if isinstance(v, Free):
                kept = frozenset(moved[a] for a in v.constant if a in moved)
                new = frozenset(range(len(_shape(result)))) - frozenset(moved.values())
                new = frozenset() if name == "stablehlo.reshape" else new  # a reshape's axes may mix the operand's
                return Free(kept | new | constant, v.zero, v.exact)
        if name in _PARTS and ins and isinstance(ins[0], Spectral) and ins[0].plain:
            return Free(constant, _NONNEG)
        return Free(constant)

    def carry(self, op: Any, ins: list[Value]) -> Value | None:
        """A carrier result of ``op``, or None (tainted)."""
        name = op.name
        if any(isinstance(v, _Tainted) for v in ins) or len(op.results) != 1:
            return None
        if name in (*_MOVES, "stablehlo.convert"):
            c = ins[0]
            if not isinstance(c, Carrier) or not isinstance(ir.RankedTensorType(op.results[0].type).element_type,
                                                            ir.FloatType):
                return None
            moved = _moved(op) if name != "stablehlo.convert" else {i: i for i in range(len(_shape(op.results[0])))}
            batch = tuple(None if b is None else moved.get(b, -1) for b in c.batch)
            if c.axis not in moved or -1 in batch:
                return None
            return Carrier(c.call, moved[c.axis], batch, c.killed)
        if name == "stablehlo.negate":
            return ins[0] if isinstance(ins[0], Carrier) else None
        if name in ("stablehlo.add", "stablehlo.subtract"):
            a, b = ins
            if (isinstance(a, Carrier) and isinstance(b, Carrier)
                    and (a.call, a.axis, a.batch) == (b.call, b.axis, b.batch)):
                return Carrier(a.call, a.axis, a.batch, a.killed and b.killed)
            return None
        if name in ("stablehlo.multiply", "stablehlo.divide"):
            c, f = ins
            if name == "stablehlo.multiply" and not isinstance(c, Carrier):
                c, f = f, c
            if not isinstance(c, Carrier) or not _factor(c, f):
                return None
            zero = f.zero  # type: ignore[union-attr]
            kills = zero == 0.0 if name == "stablehlo.multiply" else (isinstance(zero, float) and math.isinf(zero))
            return Carrier(c.call, c.axis, c.batch, c.killed or kills)
        if name == "stablehlo.select":
            pred, x, y = ins
            carrier, fill = (x, y) if isinstance(x, Carrier) else (y, x)
            if (isinstance(carrier, Carrier) and isinstance(pred, Free) and carrier.axis in pred.constant
                    and isinstance(fill, Free) and fill.exact and isinstance(fill.zero, float)
                    and (math.isnan(fill.zero) or fill.zero == 0.0)):
                return carrier
            return None
        if name == "stablehlo.dot_general":
            return _dot(op, ins)
        return None


def _masked(ins: list[Value]) -> bool:
    """Whether a ``select``'s operands are a predicate, ``s`` itself and an exact NaN (JAX's ``info`` mask)."""
    _, x, y = ins
    s, fill = (x, y) if isinstance(x, Spectral) else (y, x)
    return (isinstance(s, Spectral) and s.plain and isinstance(fill, Free) and fill.exact
            and isinstance(fill.zero, float) and math.isnan(fill.zero))


def _factor(c: Carrier, f: Value) -> bool:
    if isinstance(f, Free):
        return c.axis in f.constant
    return isinstance(f, Spectral) and (f.call, f.axis, f.batch) == (c.call, c.axis, c.batch)


def _dot(op: Any, ins: list[Value]) -> Value | None:
    numbers = stablehlo.DotDimensionNumbers(op.attributes["dot_dimension_numbers"])
    lb, rb = list(numbers.lhs_batching_dimensions), list(numbers.rhs_batching_dimensions)
    lc, rc = list(numbers.lhs_contracting_dimensions), list(numbers.rhs_contracting_dimensions)
    ranks = [len(_shape(v)) for v in op.operands]
    free = [[i for i in range(r) if i not in b and i not in c] for r, b, c in zip(ranks, (lb, rb), (lc, rc))]
    left, right = ins
    if isinstance(left, Carrier) and isinstance(right, Carrier):
        if left.call != right.call or (left.axis, right.axis) not in list(zip(lc, rc)) or not (
                left.killed or right.killed):
            return None
        if any((x is None) != (y is None) or (x is not None and (x, y) not in list(zip(lb, rb)))
               for x, y in zip(left.batch, right.batch)):
            return None
        return Free(_ones(op.results[0]))
    side = 0 if isinstance(left, Carrier) else 1
    c = ins[side]
    assert isinstance(c, Carrier)
    batching, contracting = (lb, lc) if side == 0 else (rb, rc)
    if c.axis not in free[side] or any(b in contracting for b in c.batch if b is not None):
        return None
    offset = len(lb) + (0 if side == 0 else len(free[0]))
    where = {d: i for i, d in enumerate(batching)} | {d: offset + i for i, d in enumerate(free[side])}
    return Carrier(c.call, where[c.axis], tuple(None if b is None else where[b] for b in c.batch), c.killed)


def _moved(op: Any) -> dict[int, int]:
    """Where each operand axis goes in the result of a transpose, broadcast_in_dim or reshape (size-1 axes of a
    reshape and axes broadcast from 1 to more go nowhere)."""
    source, target = _shape(op.operands[0]), _shape(op.results[0])
    if op.name == "stablehlo.transpose":
        return {a: i for i, a in enumerate(int_list(op.attributes["permutation"]))}
    if op.name in ("stablehlo.broadcast_in_dim", "stablehlo.dynamic_broadcast_in_dim"):
        dims = int_list(op.attributes["broadcast_dimensions"])
        return {a: d for a, d in enumerate(dims) if source[a] == target[d]}
    kept_source = [i for i, d in enumerate(source) if d != 1]
    kept_target = [i for i, d in enumerate(target) if d != 1]
    if [source[i] for i in kept_source] != [target[i] for i in kept_target] or None in source:
        return {}
    return dict(zip(kept_source, kept_target))


def _captures(op: Any, values: dict[Any, Value]) -> bool:
    """Whether an operation's regions read a value from outside that may depend on ``Q``."""
    return any(isinstance(values.get(v), (Carrier, _Tainted)) for inner in nested(op) for v in inner.operands)


def _calls_inside(op: Any) -> bool:
    """Whether an operation's regions hold a ``func.call`` or an SVD."""
    return any(inner.name == "func.call" or (inner.name == "stablehlo.custom_call" and ir.StringAttr(
        inner.attributes["call_target_name"]).value in GESDD) for inner in nested(op))


def invariant_svds(module: Any) -> list[Any]:
    """The ``gesdd`` calls of ``module`` (an operation) whose vectors provably do not change its public
    functions' results; none where anything may depend on their convention."""
    analysis = _Analysis()
    for function in map(operation, module.regions[0].blocks[0].operations):
        if function.name != "func.func" or is_private(function):
            continue
        results = analysis.run_function(function, [Free(_ones(a)) for a in function.regions[0].blocks[0].arguments])
        if any(not isinstance(r, (Free, Spectral)) for r in results):
            analysis.failed = True
    return [] if analysis.failed else analysis.proven


def vectors_invariant(op: Any) -> bool:
    """Whether the results of the module holding the ``gesdd`` call ``op`` do not depend on its vectors' convention."""
    return any(p == op for p in invariant_svds(module_of(op)))
