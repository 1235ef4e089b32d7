"""The user corpus's element-wise ``jax.numpy`` functions: float32 on edge values, int32 and bool."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax import lax

from .onnx_corpus import Case
from .onnx_user_corpus import EDGES, F32, FINITE, I32, SUBNORMALS, UNIT, arrays, case, ints

X = arrays(3, 5, seed=1, scale=2.0)
Y = arrays(3, 5, seed=2, scale=2.0)
POS = np.abs(arrays(3, 5, seed=3, scale=3.0)) + F32(0.05)
#: In (-1, 1), its ends and NaN.
SYM = np.array([-1.0, -0.999, -0.5, -0.0, 0.0, 0.3, 0.7, 0.999, 1.0, np.nan], F32)
#: Ranges where the float32 results keep their relative precision.
MID = np.array([-10.0, -3.0, -1.0, -0.0, 0.0, 0.1, 1.0, 3.0, 10.0, 30.0, np.nan, np.inf, -np.inf], F32)
PAIR_A = np.tile(EDGES, (len(EDGES), 1))
PAIR_B = PAIR_A.T.copy()
IA = ints(-50, 50, 4, 6, seed=4)
IB = ints(-7, 8, 4, 6, seed=5)
IB_NONZERO = np.where(IB == 0, 3, IB).astype(I32)
BIG = np.array([2**31 - 1, -2**31, -1, 0, 1, 12345678, -987654, 2**30], I32)
SHIFTS = np.array([0, 1, 31, 32, 33, -1, 5, 100], I32)
P = ints(0, 2, 3, 5, seed=6).astype(bool)
Q = ints(0, 2, 3, 5, seed=7).astype(bool)


def _unary(name: str, tolerance: float | None = None) -> Case:
    function = getattr(jnp, name)
    return case(f"jnp.{name} on edges", lambda x: function(x), EDGES, tolerance=tolerance,
                more=[[EDGES[::-1].copy()]])


def _finite(name: str, values: np.ndarray = FINITE, tolerance: float | None = None) -> Case:
    function = getattr(jnp, name)
    return case(f"jnp.{name}", lambda x: function(x), values, tolerance=tolerance)


def _binary(name: str, a: np.ndarray = PAIR_A, b: np.ndarray = PAIR_B, tolerance: float | None = None) -> Case:
    function = getattr(jnp, name)
    return case(f"jnp.{name} pairs", lambda x, y: function(x, y), a, b, tolerance=tolerance)


CASES: list[Case] = [
    *(_unary(n) for n in ("abs", "negative", "positive", "sign", "floor", "ceil", "trunc", "rint", "square",
                          "isnan", "isinf", "isfinite", "signbit", "isposinf", "isneginf", "exp", "exp2", "sqrt",
                          "cbrt", "tanh", "arctan", "deg2rad", "rad2deg", "reciprocal", "log", "log2", "log10",
                          "log1p", "expm1", "sinh", "cosh", "arcsinh", "fabs", "sinc", "i0", "spacing")),
    *(_finite(n) for n in ("sin", "cos", "tan", "round", "around", "conjugate", "real")),
    *(_finite(n, SYM) for n in ("arcsin", "arccos", "arctanh")),
    _finite("arccosh", np.array([1.0, 1.5, 2.0, 10.0, 1e4, np.inf, np.nan, 0.5], F32)),
    case("jnp.logaddexp", jnp.logaddexp, PAIR_A, PAIR_B),
    *(_binary(n) for n in ("add", "subtract", "multiply", "divide", "maximum", "minimum", "fmax", "fmin",
                           "arctan2", "hypot", "copysign", "nextafter", "heaviside", "logaddexp2", "greater",
                           "less_equal", "equal", "not_equal", "float_power")),
    _binary("power", np.tile(MID, (13, 1)), np.tile(MID, (13, 1)).T.copy()),
    _binary("fmod", X, Y), _binary("remainder", X, Y), _binary("mod", X, Y), _binary("floor_divide", X, Y),
    case("jnp.fmod remainder floor_divide on edges", lambda x, y: (jnp.fmod(x, y), jnp.remainder(x, y),
                                                                   jnp.floor_divide(x, y)), PAIR_A, PAIR_B),
    _binary("true_divide", X, np.where(Y == 0, 1, Y).astype(F32)),
    case("jnp.divmod", jnp.divmod, X, Y),
    case("jnp.modf", jnp.modf, FINITE),
    case("jnp.frexp", jnp.frexp, np.array([1.0, 0.5, -3.0, 1e30, 1e-30, 0.0, -0.0, 123.25], F32)),
    case("jnp.ldexp", jnp.ldexp, np.array([1.0, -0.5, 3.0, 0.0, 1e-30, 7.0], F32),
         np.array([3, -2, 100, 5, 20, -140], I32)),
    case("subnormals through continuous functions", lambda x: (
        x * 3, x + 1e-39, jnp.sin(x), jnp.tanh(x), jnp.exp(x), jnp.abs(x), jnp.cbrt(x) ** 3, jnp.maximum(x, 0)),
         SUBNORMALS),
    case("jnp.nan_to_num", lambda x: jnp.nan_to_num(x), EDGES),
    case("jnp.nan_to_num with values", lambda x: jnp.nan_to_num(x, nan=-1.0, posinf=9.0, neginf=-9.0), EDGES),
    case("jnp.clip", lambda x: jnp.clip(x, -1.0, 2.0), EDGES),
    case("jnp.clip by arrays", lambda x, lo, hi: jnp.clip(x, lo, hi), X, Y - 1, Y + 1),
    case("jnp.where", lambda x, y: jnp.where(x > y, x, y * 2), PAIR_A, PAIR_B),
    case("jnp.select", lambda x: jnp.select([x < -1, x > 1], [x * 2, -x], 0.5), EDGES),
    case("jnp.piecewise", lambda x: jnp.piecewise(x, [x < 0, x >= 0], [lambda v: -v, lambda v: v ** 2]), FINITE),
    case("jnp.isclose", lambda x, y: jnp.isclose(x, y), PAIR_A, PAIR_B),
    case("jnp.isclose equal_nan", lambda x, y: jnp.isclose(x, y, equal_nan=True), PAIR_A, PAIR_B),
    case("jnp.allclose", lambda x, y: jnp.allclose(x, y + 1e-6), X, X),
    case("jnp.interp", lambda x, xp, fp: jnp.interp(x, xp, fp), np.array([-1.0, 0.0, 0.5, 2.5, 9.0, 3.0], F32),
         np.array([0.0, 1.0, 2.0, 3.0], F32), np.array([1.0, -1.0, 4.0, 0.5], F32)),
    case("jnp.round decimals", lambda x: jnp.round(x, 2), X * 10),
    case("astype int32 (in range)", lambda x: x.astype(jnp.int32), FINITE * 3),
    case("astype uint8 (in range)", lambda x: jnp.abs(x).astype(jnp.uint8), FINITE),
    case("astype bool", lambda x: x.astype(bool), EDGES),
    case("astype float16 and back", lambda x: x.astype(jnp.float16).astype(jnp.float32), MID),
    case("astype bfloat16 and back", lambda x: x.astype(jnp.bfloat16).astype(jnp.float32), MID),
    case("int32 to float32", lambda i: i.astype(jnp.float32) / 7, BIG),
    # int32
    case("int add multiply wrap", lambda a, b: (a + b, a * b, a - b), BIG, BIG[::-1].copy()),
    case("int floor_divide and remainder", lambda a, b: (a // b, a % b, jnp.fmod(a, b)), IA, IB_NONZERO),
    case("int abs sign negative", lambda a: (jnp.abs(a), jnp.sign(a), -a), BIG),
    case("int power", lambda a, b: jnp.power(a, jnp.abs(b) % 4), IA, IB),
    case("int maximum minimum clip", lambda a, b: (jnp.maximum(a, b), jnp.minimum(a, b), jnp.clip(a, -9, 9)), IA, IB),
    case("int bitwise and or xor not", lambda a, b: (a & b, a | b, a ^ b, ~a), BIG, BIG[::-1].copy()),
    case("int shifts in and out of range", lambda a, s: (jnp.left_shift(a, s), jnp.right_shift(a, s)), BIG, SHIFTS),
    case("uint32 shifts and wrap", lambda a, s: (a << s, a >> s, a * a),
         BIG.view(np.uint32), SHIFTS.view(np.uint32)),
    case("jnp.gcd and jnp.lcm", lambda a, b: (jnp.gcd(a, b), jnp.lcm(a, b)), IA, IB),
    case("jnp.bitwise_count", jnp.bitwise_count, BIG),
    case("int comparisons", lambda a, b: (a < b, a == b, a >= b), IA, IB),
    case("int division by zero and of the minimum by -1", lambda a, b: (lax.div(a, b), lax.rem(a, b), a // b, a % b),
         BIG, np.array([0, -1, 0, 0, -1, 7, -3, 0], I32)),
    case("float to int32 out of range and NaN", lambda x: x.astype(jnp.int32), np.concatenate(
        [EDGES, np.array([3e9, -3e9, 2.1e9, -2.2e9], F32)])),
    case("float to uint8 negative and large", lambda x: x.astype(jnp.uint8), np.array(
        [-1.0, -3.5, 255.0, 256.0, 300.0, 1e10, 7.9], F32)),
    case("float to bool and int8 to float16", lambda x, i: (x.astype(bool), i.astype(jnp.float16)), EDGES,
         np.array([-128, 127, 0, -1, 5], np.int8)),
    case("float16 arithmetic", lambda x, y: (x * y + 1, jnp.exp(x), jnp.sqrt(jnp.abs(y)), x / y),
         EDGES.astype(np.float16), EDGES[::-1].astype(np.float16)),
    case("int true divide", lambda a, b: a / b, IA, IB_NONZERO),
    # bool
    case("bool logic", lambda p, q: (p & q, p | q, p ^ q, ~p, jnp.logical_xor(p, q), jnp.logical_not(p)), P, Q),
    case("bool where count", lambda p, x: (jnp.where(p, x, -x), p.astype(jnp.int32) * 3), P, X),
    case("jnp.logit-like composite", lambda u: jnp.log(u) - jnp.log1p(-u), UNIT),
]
