"""The sign of a zero in the ONNX translation equals JAX's, at no extra operation where none is needed.

ONNX Runtime's CPU ``Where`` (1.32) gives +0.0 for a zero of its first
branch (it merges ``X != 0 ? X : Y``), and its ``Max``/``Min`` return the
second operand on a tie of zeros, where XLA orders -0.0 below +0.0. The
translations put a value that may be -0.0 in ``Where``'s second branch
(swapping the branches under a comparison's complement, ``trunc`` as
``Where(x > 0, floor, ceil)``), order ``Max``/``Min``'s operands by a
constant's sign and spell ``x != x`` as ``IsNaN`` (a ``Not`` before a
``Where`` is fused by ONNX Runtime into the ``Where`` with its branches
swapped). Each case fails on the zero signs without these.

The cases are translated as ``jaxport convert --to onnx`` translates them,
up to the newest opset: JAX 0.12.1's ``jnp.modf`` gives an infinity's
fraction as ``copysign(0, x)``, whose ``signbit`` reads the float's bits
(``bitcast_convert``), ``BitCast`` at opset 26. Below it ONNX cannot read
a NaN's sign bit, so ``signbit`` has no exact translation there and is
refused (``test_onnx_refused_before.py``).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("onnx", reason="the ONNX tests need the jaxport[onnx] extra (onnx)")
pytest.importorskip("onnxruntime", reason="the ONNX tests need the jaxport[onnx] extra (onnxruntime)")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

from jaxport.adapters.onnx.runtime import OnnxRuntimeModel  # noqa: E402
from tests.helpers.onnx_corpus import Case, assert_close, expected, save, spec, to_onnx  # noqa: E402
from tests.helpers.onnx_user_corpus import assert_zero_signs  # noqa: E402
from jaxport.domain.targets.onnx import NEWEST_OPSET  # noqa: E402

F32 = np.float32
EDGES = np.array([np.nan, -np.inf, -3.5, -1.0, -0.5, -0.0, 0.0, 0.25, 0.5, 1.0, 2.5, np.inf, -np.nan], F32)
N = EDGES.size

CASES = [
    Case("sign, trunc, modf", lambda x: (jnp.sign(x), jnp.trunc(x), *jnp.modf(x)),
         [spec((N,))], [[EDGES]]),
    Case("cbrt, log1p, expm1 and what uses them", lambda x: (
        jnp.cbrt(x), jnp.log1p(x), jnp.expm1(x), jnp.arcsinh(x), jax.nn.elu(x), jax.nn.selu(x)),
         [spec((N,))], [[EDGES]]),
    Case("leaky_relu, nan_to_num, heaviside, isnan selections", lambda x, y: (
        jax.nn.leaky_relu(x), jnp.nan_to_num(x), jnp.nan_to_num(x, nan=1.0, posinf=2.0, neginf=-2.0),
        jnp.heaviside(x, y), jnp.where(jnp.isnan(x), 0.0, x)),
         [spec((N,)), spec((N,))], [[EDGES, EDGES[::-1].copy()]]),
    Case("arctan2 of signed zeros and infinities", lambda y, x: (jnp.arctan2(y, x), lax.atan2(x, y)),
         [spec((8,)), spec((8,))], [[np.array([0.0, -0.0, 0.0, -0.0, 1.0, -1.0, np.inf, -np.inf], F32),
                                     np.array([0.0, 0.0, -0.0, -0.0, np.inf, -np.inf, np.inf, -np.inf], F32)]]),
    Case("no complement where a NaN of the other operand would pick the other branch", lambda x, y: (
        jnp.where(x >= y, x, x * 2 + 1), jnp.where(x < 0.0, x * 2 + 1, x)),
         [spec((N,)), spec((N,))], [[EDGES, np.full(N, np.nan, F32)], [EDGES, EDGES[::-1].copy()]]),
    Case("maximum and minimum of two variables, every pair of edges", lambda a, b: (
        jnp.maximum(a, b), jnp.minimum(a, b), jnp.maximum(a.astype(jnp.float16), b.astype(jnp.float16))),
         [spec((N, N)), spec((N, N))], [[*np.meshgrid(EDGES, EDGES)]]),
    Case("maximum and minimum with a constant zero, either side, and clamp", lambda x: (
        jnp.maximum(x, 0.0), jnp.maximum(0.0, x), jnp.minimum(x, 0.0), jnp.minimum(0.0, x),
        jnp.maximum(x, -0.0), jnp.minimum(-0.0, x), jax.nn.relu(x), jnp.clip(x, 0.0, 1.0),
        jnp.clip(x, -1.0, -0.0), lax.clamp(F32(-0.0), x, F32(0.0))),
         [spec((N,))], [[EDGES]]),
]


def _ops(case: Case) -> Counter[str]:
    return Counter(n.op_type for n in to_onnx(case).graph.node)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_zeros_keep_jax_sign(case: Case, tmp_path: Path) -> None:
    runtime = OnnxRuntimeModel(save(to_onnx(case, max_opset=NEWEST_OPSET), tmp_path, "case"), threads=1)
    for args, want in zip(case.args, expected(case)):
        got = runtime.run(list(args))
        assert_close(got, want)
        assert_zero_signs(got, want)


@pytest.mark.parametrize(("function", "ops"), [
    (jnp.trunc, {"Greater": 1, "Floor": 1, "Ceil": 1, "Where": 1}),
    (jax.nn.leaky_relu, {"Less": 1, "Mul": 1, "Where": 1}),
    (jnp.isnan, {"IsNaN": 1}),
    (lambda x: jnp.maximum(x, 0.0), {"Max": 1}),
    (lambda x: jnp.minimum(0.0, x), {"Min": 1}),
])
def test_the_selections_add_no_operation(function: Any, ops: dict[str, int]) -> None:
    case = Case("ops", function, [spec((N,))], [[EDGES]])
    got = _ops(case)
    got.pop("Identity", None)
    got.pop("Expand", None)  # a constant broadcast, skipped where the operator broadcasts
    assert dict(got) == ops
