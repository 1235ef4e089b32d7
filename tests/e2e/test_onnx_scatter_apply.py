"""``x.at[i].apply(f)`` (a scatter whose body ignores the update) converts to ONNX and equals JAX.

An element hit ``k`` times gets ``f`` applied ``k`` times, as XLA's CPU
applies the body once per hit; out-of-bounds indices are dropped (negative
ones JAX first wraps once); with ``unique_indices=True`` one selection
does it; empty and batched operands, narrow types too.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("onnx", reason="the ONNX tests need the jaxport[onnx] extra (onnx)")
pytest.importorskip("onnxruntime", reason="the ONNX tests need the jaxport[onnx] extra (onnxruntime)")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from tests.helpers.onnx_corpus import Case, check_case, spec, to_onnx  # noqa: E402

F32, I32 = np.float32, np.int32
X = np.linspace(-2.0, 2.5, 10).astype(F32)
REPEATED = np.array([0, 2, 2, 8, 2, 9], I32)
OUT_OF_BOUNDS = np.array([-1, 12, -20, 10, 3, 3, -10], I32)

CASES = [
    Case("repeated indices apply f as often", lambda x, i: x.at[i].apply(jnp.sin), [spec((10,)), spec((6,), I32)],
         [[X, REPEATED], [X, np.zeros(6, I32)], [X, np.arange(6, dtype=I32)]]),
    Case("out-of-bounds indices are dropped", lambda x, i: x.at[i].apply(lambda v: v * 2 + 1),
         [spec((10,)), spec((7,), I32)], [[X, OUT_OF_BOUNDS]]),
    Case("unique indices, one selection", lambda x, i: x.at[i].apply(jnp.exp, unique_indices=True),
         [spec((10,)), spec((3,), I32)], [[X, np.array([1, 4, 7], I32)]]),
    Case("no indices", lambda x, i: x.at[i].apply(jnp.cos), [spec((10,)), spec((0,), I32)],
         [[X, np.zeros(0, I32)]]),
    Case("an empty operand", lambda x, i: x.at[i].apply(jnp.cos), [spec((0, 3)), spec((2,), I32)],
         [[np.zeros((0, 3), F32), np.array([0, 1], I32)]]),
    Case("rows of a batch and columns", lambda x, i: (x.at[i].apply(jnp.tanh), x.at[:, i].apply(jnp.square)),
         [spec((4, 5)), spec((3,), I32)],
         [[np.arange(20, dtype=F32).reshape(4, 5) / 10, np.array([1, 3, 1], I32)]]),
    Case("int8 and float16", lambda x, h, i: (x.at[i].apply(lambda v: v * 3 + 1), h.at[i].apply(jnp.abs)),
         [spec((5,), np.int8), spec((5,), np.float16), spec((4,), I32)],
         [[np.array([1, -2, 100, 7, -128], np.int8), np.array([-1.5, 2, -0.0, -4, 5], np.float16),
           np.array([2, 2, 0, 4], I32)]]),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_apply_matches_jax(case: Case, tmp_path: Path) -> None:
    check_case(case, tmp_path)


def test_unique_indices_need_no_loop_and_repeated_ones_one_loop() -> None:
    def ops(function: Callable[..., Any]) -> Counter[str]:
        case = Case("ops", function, [spec((10,)), spec((3,), I32)], [])
        return Counter(n.op_type for n in to_onnx(case).graph.node)

    assert ops(lambda x, i: x.at[i].apply(jnp.sin, unique_indices=True))["Loop"] == 0
    assert ops(lambda x, i: x.at[i].apply(jnp.sin))["Loop"] == 1


def test_jax_applies_the_body_once_per_hit_on_the_cpu() -> None:
    got = jax.jit(lambda x, i: x.at[i].apply(jnp.sin))(X, REPEATED)
    np.testing.assert_allclose(got[2], np.sin(np.sin(np.sin(X[2]))), rtol=1e-6)
