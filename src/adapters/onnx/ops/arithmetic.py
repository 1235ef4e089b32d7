"""ONNX translations of the elementwise operations with XLA's edge semantics.

Where ONNX has no operator or ONNX Runtime computes something else at the
edges, the translation spells out what XLA computes:

- integer ``divide`` by zero gives -1 (the unsigned maximum), ``INT_MIN / -1``
  gives ``INT_MIN``; integer ``remainder`` by zero gives the dividend (ONNX
  Runtime fails or traps on both);
- ``convert`` from float to integer truncates, saturates at the type's
  bounds and maps NaN to 0;
- ``compare`` with ``TOTALORDER`` orders ``-0 < +0`` and NaN above
  everything where its operands went through JAX's canonicalization for
  sorting and searching (NaNs made positive; ``jnp.sort``,
  ``jnp.searchsorted``); elsewhere the sign of a NaN is read from its bits
  (:mod:`.bitcast`, opset 26), as is ``reduce_precision`` to a format other
  than float16, bfloat16 or the operand's own;
- ``log_plus_one``, ``exponential_minus_one`` keep their accuracy near 0
  (Goldberg's and Kahan's formulations), ``atan2`` follows C's special cases
  (signed zeros, infinities), ``round_nearest_afz`` rounds halves away
  from zero (and keeps a zero's sign), ``sign`` keeps NaN and signed zeros; ``maximum``, ``minimum`` and
  ``clamp`` of booleans and narrow integers compute in a type ONNX Runtime
  has kernels for (its ``Max`` and ``Min`` propagate NaN, as XLA's do), of
  floats order a tie of zeros as XLA (:mod:`.signed_zeros`; ``clamp`` only where the order of its
  operands can say it: a tie of two zeros of other signs may give +0.0 where XLA gives -0.0).

Integer operations ONNX Runtime's CPU provider has no kernel for (8- and
16-bit types) compute in int32 and cast back (wrapping as XLA does).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from jaxport.adapters.onnx.builder import BOOL, I32, NARROW_FLOATS, GraphBuilder, narrow_float, round_to, tensor_dtype
from . import signed_zeros
from .bitcast import reduce_precision, total_order
from .common import Translation, compared, direction, splat_value, wide_dtype



def _widened(b: GraphBuilder, args: Sequence[str], dtype: np.dtype[Any]) -> tuple[list[str], np.dtype[Any]]:
    wide = wide_dtype(dtype)  # booleans: int32
    return [b.cast(a, wide, dtype) for a in args], wide


#: The refusal of an operation defined here for floating-point operands only.
_FLOATS_ONLY = "defined for floating-point operands only"


def _widening(compute: Callable[..., str], refusal: str = "") -> Translation:
    """The translation that is ``compute(b, wide, *operands)`` on the operands in the dtype computed in
    (:func:`.common.wide_dtype`), cast back; ``refusal``: defined for floats only, others refused with it."""
    def translate(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
        dtype = tensor_dtype(op.results[0])
        if refusal and dtype.kind != "f":
            b.refuse(refusal)
        operands, wide = _widened(b, args, dtype)
        return [b.cast(compute(b, wide, *operands), dtype, wide)]
    return translate


def _known_safe(b: GraphBuilder, divisor: str) -> bool:
    """Whether ``divisor`` is a constant without 0 and -1 (shape arithmetic's): a plain ``Div`` is exact."""
    known = b.known.get(divisor)
    return known is not None and not bool(np.any(known == 0)) and not bool(np.any(known == -1))


def _safe_divisor(b: GraphBuilder, x: str, y: str, wide: np.dtype[Any]) -> tuple[str, str]:
    """The divisor with 0 and -1 replaced by 1 (where ONNX Runtime fails or traps), and where y is 0."""
    zero = b.one("Equal", [y, b.scalar(0, wide)])
    unsafe = zero if wide.kind == "u" else b.one("Or", [zero, b.one("Equal", [y, b.scalar(-1, wide)])])
    return b.one("Where", [unsafe, b.scalar(1, wide), y]), zero


def _divide(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    dtype = tensor_dtype(op.results[0])
    if dtype.kind == "f" or (dtype.itemsize >= 4 and _known_safe(b, args[1])):
        return [b.one("Div", args)]
    (x, y), wide = _widened(b, args, dtype)
    safe, zero = _safe_divisor(b, x, y, wide)
    quotient = b.one("Div", [x, safe])
    if dtype.kind == "i":  # x / -1 is -x, INT_MIN / -1 wraps to INT_MIN as in XLA
        negated = b.one("Sub", [b.scalar(0, wide), x])
        quotient = b.one("Where", [b.one("Equal", [y, b.scalar(-1, wide)]), negated, quotient])
    all_ones = -1 if dtype.kind == "i" else np.iinfo(dtype).max
    return [b.cast(b.one("Where", [zero, b.scalar(all_ones, wide), quotient]), dtype, wide)]


def _remainder(b: GraphBuilder, wide: np.dtype[Any], x: str, y: str) -> str:
    if wide.kind == "f":
        return b.one("Mod", [x, y], fmod=1)  # C's fmod: the sign of the dividend, as StableHLO's
    safe, zero = _safe_divisor(b, x, y, wide)
    # x - trunc(x / y) * y in integers (ONNX Runtime's integer fmod goes through double precision)
    remainder = b.one("Sub", [x, b.one("Mul", [b.one("Div", [x, safe]), safe])])
    return b.one("Where", [zero, x, remainder])


def _log_plus_one(b: GraphBuilder, wide: np.dtype[Any], x: str) -> str:
    u = b.one("Add", [x, b.scalar(1, wide)])
    inf = b.one("IsInf", [u], detect_negative=0)  # log1p(+inf) = +inf; log1p(-inf) is NaN, as Log gives it
    um1 = b.one("Sub", [u, b.scalar(1, wide)])
    scaled = b.one("Div", [b.one("Mul", [b.one("Log", [u]), x]), um1])
    return b.one("Where", [_nonzero(b, um1, wide), b.one("Where", [inf, u, scaled]), x])


def _nonzero(b: GraphBuilder, u_minus_one: str, wide: np.dtype[Any]) -> str:
    """``u - 1 != 0`` (false for NaN), to select ``x`` where ``u == 1`` in ``Where``'s second branch, which keeps
    a -0.0 (its first branch gives +0.0: signed_zeros); not ``Not(u == 1)``, which ONNX Runtime's
    ``NotWhereFusion`` turns back into ``Where(u == 1, x, ...)``."""
    return b.one("Greater", [b.one("Abs", [u_minus_one]), b.scalar(0, wide)])


def _exponential_minus_one(b: GraphBuilder, wide: np.dtype[Any], x: str) -> str:
    u = b.one("Exp", [x])
    um1 = b.one("Sub", [u, b.scalar(1, wide)])
    scaled = b.one("Div", [b.one("Mul", [um1, x]), b.one("Log", [u])])
    edge = b.one("Or", [b.one("IsInf", [u]), b.one("Equal", [um1, b.scalar(-1, wide)])])
    return b.one("Where", [_nonzero(b, um1, wide), b.one("Where", [edge, um1, scaled]), x])  # as in log1p


def _negative(b: GraphBuilder, x: str, wide: np.dtype[Any]) -> str:
    """Whether the sign bit of ``x`` is set, for every value but NaN (``-0`` included)."""
    zero = b.scalar(0, wide)
    return b.one("Or", [b.one("Less", [x, zero]), b.one("And", [b.one("Equal", [x, zero]), b.one(
        "Less", [b.one("Reciprocal", [x]), zero])])])


def _atan2(b: GraphBuilder, wide: np.dtype[Any], y: str, x: str) -> str:
    pi = b.scalar(np.pi, wide)
    x_neg, y_neg = _negative(b, x, wide), _negative(b, y, wide)
    zero = b.scalar(0, wide)
    # atan2(+-0, +-0) through the general formula with a divisor of 1: +-0 or +-pi, with the zeros in Where's
    # second branch (its first turns -0.0 into +0.0: signed_zeros)
    both_zero = b.one("And", [b.one("Equal", [x, zero]), b.one("Equal", [y, zero])])
    base = b.one("Atan", [b.one("Div", [y, b.one("Where", [both_zero, b.scalar(1, wide), x])])])
    turned = b.one("Add", [base, b.one("Where", [y_neg, b.one("Neg", [pi]), pi])])
    general = b.one("Where", [x_neg, turned, base])
    y_sign = b.one("Where", [y_neg, b.scalar(-1, wide), b.scalar(1, wide)])
    infinities = b.one("Mul", [b.one("Where", [x_neg, b.scalar(3 * np.pi / 4, wide), b.scalar(np.pi / 4, wide)]),
                               y_sign])
    both_inf = b.one("And", [b.one("IsInf", [x]), b.one("IsInf", [y])])
    return b.one("Where", [both_inf, infinities, general])


def _cbrt(b: GraphBuilder, wide: np.dtype[Any], x: str) -> str:
    root = b.one("Pow", [b.one("Abs", [x]), b.scalar(1 / 3, wide)])
    sign = b.one("Where", [_negative(b, x, wide), b.scalar(-1, wide), b.scalar(1, wide)])
    return b.one("Mul", [root, sign])  # -1 * +0 is -0; Where would lose it


def _round_afz(b: GraphBuilder, wide: np.dtype[Any], x: str) -> str:
    # Round (halves to even) keeps a zero's sign (-0.4 -> -0.0); a half moves away from zero, exactly
    tie = b.one("Equal", [b.one("Sub", [x, b.one("Floor", [x])]), b.scalar(0.5, wide)])
    away = b.one("Add", [x, b.one("Mul", [b.one("Sign", [x]), b.scalar(0.5, wide)])])
    return b.one("Where", [tie, away, b.one("Round", [x])])


def _sign(b: GraphBuilder, wide: np.dtype[Any], x: str) -> str:
    sign = b.one("Sign", [x])
    if wide.kind == "f":  # NaN stays NaN, -0 stays -0: x in Where's second branch, which keeps a -0.0
        sign = b.one("Where", [b.one("Greater", [b.one("Abs", [x]), b.scalar(0, wide)]), sign, x])
    return sign


def _clamp(b: GraphBuilder, wide: np.dtype[Any], low: str, x: str, high: str) -> str:
    # ONNX Runtime's Max and Min propagate NaN, as XLA's do (the corpus tests it)
    if wide.kind == "f":  # a tie of zeros as XLA's, where the order of the operands can say it
        low_clamped = b.one("Max", signed_zeros.ordered(b, "Max", x, low) or [x, low])
        return b.one("Min", signed_zeros.ordered(b, "Min", low_clamped, high) or [low_clamped, high])
    return b.one("Min", [b.one("Max", [x, low]), high])


def _min_max(op_type: str) -> Translation:
    def translate(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
        dtype = tensor_dtype(op.results[0])
        if dtype == BOOL:
            return [b.one("Or" if op_type == "Max" else "And", args)]
        (x, y), wide = _widened(b, args, dtype)  # ONNX Runtime's Max and Min propagate NaN, as XLA's
        if dtype.kind == "f":
            return [b.cast(signed_zeros.min_max(b, op_type, x, y, wide), dtype, wide)]
        return [b.cast(b.one(op_type, [x, y]), dtype, wide)]
    return translate


def _reduce_precision(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    exponent = ir.IntegerAttr(op.attributes["exponent_bits"]).value
    mantissa = ir.IntegerAttr(op.attributes["mantissa_bits"]).value
    element = str(ir.RankedTensorType(op.operands[0].type).element_type)
    own = {"f32": (8, 23), "f64": (11, 52), "f16": (5, 10), "bf16": (8, 7)}.get(element)
    if own is not None and (exponent, mantissa) == own:
        return [args[0]]
    if element in ("f32", "f16", "bf16") and (exponent, mantissa) in ((8, 7), (5, 10)):
        return [round_to(b, args[0], NARROW_FLOATS["bf16" if exponent == 8 else "f16"])]
    if own is not None and exponent >= own[0] and mantissa >= own[1]:
        return [args[0]]
    return reduce_precision(b, op, args, exponent, mantissa)


def _compare(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    how = direction(op)
    kind = (stablehlo.ComparisonTypeAttr(op.attributes["compare_type"]).value
            if "compare_type" in op.attributes else "")
    dtype = tensor_dtype(op.operands[0])
    (x, y), wide = _widened(b, args, dtype)
    if kind == "TOTALORDER" and dtype.kind == "f":
        if not all(_canonical_nan(v) for v in op.operands):
            return [total_order(b, how, x, y, wide)]  # the sign of a NaN read from its bits
        return [_total_order(b, how, x, y, wide)]
    if how == "NE" and dtype.kind == "f" and x == y:  # JAX's isnan; a Not before a Where, ONNX Runtime
        return [b.one("IsNaN", [x])]  # fuses into the Where with its branches swapped (see signed_zeros)
    return [compared(b, how, x, y)]


def _canonical_nan(value: Any) -> bool:
    """Whether ``value``'s NaNs are all positive: JAX's canonicalization of NaNs for sorting and searching.

    That is ``select(v != v, +NaN, w)`` where ``w`` is ``v`` or ``select(c, k, v)`` with ``k`` a constant
    that is not NaN (JAX's ``-0.0`` to ``+0.0``), the constants and the result possibly broadcast: ``w``
    is NaN only where ``v`` is, and there the result is ``+NaN``.
    """
    owner = _producer(_through_broadcasts(value), "stablehlo.select")
    if owner is None:
        return False
    nan = splat_value(_through_broadcasts(owner.operands[1]))
    condition = _producer(owner.operands[0], "stablehlo.compare")
    if (nan is None or not isinstance(nan, float) or not np.isnan(nan) or np.signbit(nan) or condition is None
            or direction(condition) != "NE"
            or condition.operands[0] != condition.operands[1]):
        return False
    v, w = condition.operands[0], owner.operands[2]
    if w == v:
        return True
    inner = _producer(w, "stablehlo.select")
    if inner is None or inner.operands[2] != v:
        return False
    constant = splat_value(_through_broadcasts(inner.operands[1]))
    return constant is not None and not np.isnan(constant)


def _producer(value: Any, name: str) -> Any:
    """The operation named ``name`` producing ``value``, else None."""
    owner = value.owner
    if isinstance(owner, (ir.Operation, ir.OpView)) and owner.name == name:
        return owner
    return None


def _through_broadcasts(value: Any) -> Any:
    """``value``, or the scalar a chain of ``broadcast_in_dim`` (static or dynamic) of it broadcasts."""
    owner = _producer(value, "stablehlo.broadcast_in_dim") or _producer(value, "stablehlo.dynamic_broadcast_in_dim")
    return value if owner is None else _through_broadcasts(owner.operands[0])


def _total_order(b: GraphBuilder, how: str, x: str, y: str, wide: np.dtype[Any]) -> str:
    def less(p: str, q: str) -> str:
        p_nan, q_nan = b.one("IsNaN", [p]), b.one("IsNaN", [q])
        zeros = b.one("And", [b.one("And", [b.one("Equal", [p, b.scalar(0, wide)]),
                                            b.one("Equal", [q, b.scalar(0, wide)])]),
                              b.one("And", [_negative(b, p, wide), b.one("Not", [_negative(b, q, wide)])])])
        return b.one("Or", [b.one("Or", [b.one("Less", [p, q]), zeros]),
                            b.one("And", [b.one("Not", [p_nan]), q_nan])])

    def equal() -> str:
        same_sign = b.one("Equal", [_negative(b, x, wide), _negative(b, y, wide)])
        return b.one("Or", [b.one("And", [b.one("Equal", [x, y]), same_sign]),
                            b.one("And", [b.one("IsNaN", [x]), b.one("IsNaN", [y])])])

    if how == "LT":
        return less(x, y)
    if how == "GT":
        return less(y, x)
    if how == "LE":
        return b.one("Or", [less(x, y), equal()])
    if how == "GE":
        return b.one("Or", [less(y, x), equal()])
    return equal() if how == "EQ" else b.one("Not", [equal()])


def _convert(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    source, target = tensor_dtype(op.operands[0]), tensor_dtype(op.results[0])
    narrow = narrow_float(op.results[0])
    if narrow is not None and narrow != narrow_float(op.operands[0]):  # float16/bfloat16: float32 inside
        return [round_to(b, b.cast(args[0], target, source), narrow)]
    if source == target:
        return [args[0]]
    if source.kind != "f" or target.kind not in "iu":
        return [b.cast(args[0], target)]
    x, wide = args[0], source
    info = np.iinfo(target)
    high = b.scalar(2.0 ** (target.itemsize * 8 - (target.kind == "i")), wide)
    low = b.scalar(float(info.min), wide)
    inside = b.one("And", [b.one("Less", [x, high]), b.one("Greater", [x, low])])
    safe = b.one("Where", [b.one("And", [inside, b.one("Not", [b.one("IsNaN", [x])])]), x, b.scalar(0, wide)])
    cast_to = target if target.itemsize >= 4 else I32
    value = b.cast(safe, cast_to)
    value = b.one("Where", [b.one("GreaterOrEqual", [x, high]), b.scalar(info.max, cast_to),
                            b.one("Where", [b.one("LessOrEqual", [x, low]), b.scalar(info.min, cast_to), value])])
    return [b.cast(value, target, cast_to)]


TABLE: dict[str, Translation] = {
    "stablehlo.divide": _divide,
    "stablehlo.remainder": _widening(_remainder),
    "stablehlo.power": _widening(lambda b, wide, x, y: b.one("Pow", [x, y]), "integer power (XLA wraps on "
                                 "overflow, gives 0 for negative exponents) has no exact ONNX form"),
    "stablehlo.log_plus_one": _widening(_log_plus_one, _FLOATS_ONLY),
    "stablehlo.exponential_minus_one": _widening(_exponential_minus_one, _FLOATS_ONLY),
    "stablehlo.atan2": _widening(_atan2, _FLOATS_ONLY),
    "stablehlo.cbrt": _widening(_cbrt, _FLOATS_ONLY),
    "stablehlo.round_nearest_afz": _widening(_round_afz, _FLOATS_ONLY),
    "stablehlo.round_nearest_even": _widening(lambda b, wide, x: b.one("Round", [x]), _FLOATS_ONLY),
    "stablehlo.sign": _widening(_sign),
    "stablehlo.clamp": _widening(_clamp),
    "stablehlo.maximum": _min_max("Max"),
    "stablehlo.minimum": _min_max("Min"),
    "stablehlo.reduce_precision": _reduce_precision,
    "stablehlo.compare": _compare,
    "stablehlo.convert": _convert,
}
