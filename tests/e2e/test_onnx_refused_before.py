"""What the ONNX translation refused before issue 40, converted, run on ONNX Runtime, compared with ``jax.jit``.

Each case is on edge inputs (NaN, infinities, signed zeros, empty and
batched shapes); a case either matches JAX or is refused with the typed
error naming the operation, as in the corpus (``test_onnx_corpus.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("onnx", reason="the ONNX tests need the jaxport[onnx] extra (onnx)")
pytest.importorskip("onnxruntime", reason="the ONNX tests need the jaxport[onnx] extra (onnxruntime)")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

import jaxport  # noqa: E402
from jaxport.adapters.onnx.runtime import OnnxRuntimeModel  # noqa: E402
from jaxport.errors import UnsupportedOperationError  # noqa: E402
from tests.helpers.onnx_corpus import Case, assert_close, expected, save, spec, to_onnx  # noqa: E402

b = jaxport.symbolic_shape("b")[0]
rng = np.random.default_rng(40)
F32, I32, U8, U32 = np.float32, np.int32, np.uint8, np.uint32
#: NaN of both signs, both infinities, both zeros, ties (no subnormal: XLA's CPU flushes them to zero,
#: ONNX Runtime does not).
EDGES = np.array([np.nan, -np.inf, -1.5, -0.0, 0.0, 1.5, 1.5, np.inf, -np.nan], F32)


def ints(low: int, high: int, *shape: int, dtype: Any = I32) -> np.ndarray:
    return rng.integers(low, high, size=shape).astype(dtype)


def _xor_all(x: jax.Array, axes: Any) -> jax.Array:
    result: jax.Array = lax.reduce(x, np.array(0, x.dtype), lax.bitwise_xor, axes)
    return result


CASES: list[Case] = [
    Case("reduce xor or and of integers", lambda x, u: (
        _xor_all(x, (1,)), lax.reduce(x, np.int32(-1), lax.bitwise_and, (0,)),
        lax.reduce(u, np.uint8(0), lax.bitwise_or, (0, 1)), lax.reduce(x, np.int32(5), lax.bitwise_or, ()),
        _xor_all(u, (0,))),
         [spec((b, 5), I32), spec((3, 4), U8)],
         [[ints(-2**31, 2**31 - 1, 3, 5), ints(0, 256, 3, 4, dtype=U8)],
          [ints(-9, 9, 1, 5), ints(0, 256, 3, 4, dtype=U8)]]),
    Case("reduce xor empty and batched", lambda x, p: (_xor_all(x, (0, 2)), lax.reduce(
        p, False, lax.bitwise_xor, (1,)), lax.reduce(x, np.uint32(7), lax.bitwise_xor, (1,))),
         [spec((2, b, 3), U32), spec((4, b), np.bool_)],
         [[ints(0, 50, 2, 0, 3, dtype=U32), np.zeros((4, 0), bool)],
          [ints(0, 2**32, 2, 6, 3, dtype=U32), rng.random((4, 6)) < 0.5]]),
    Case("searchsorted with NaN, signed zeros and infinities (TOTALORDER)", lambda a, v: (
        jnp.searchsorted(a, v), jnp.searchsorted(a, v, side="right"),
        jnp.searchsorted(a, v, method="compare_all")),
         [spec((7,)), spec((b,))],
         [[np.array([-np.inf, -1.5, -0.0, 0.0, 1.5, np.inf, np.nan], F32), EDGES],
          [np.array([-3.0, -0.0, -0.0, 0.0, 2.0, 2.0, 9.0], F32), EDGES[:3]]]),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_case_matches_jax_or_is_refused_by_name(case: Case, tmp_path: Path) -> None:
    try:
        model = to_onnx(case)
    except UnsupportedOperationError as exc:
        assert case.refused is not None, f"{case.name}: refused {exc}"
        assert exc.operation == case.refused, str(exc)
        return
    assert case.refused is None, f"{case.name}: converted, but the case says {case.refused} is refused"
    runtime = OnnxRuntimeModel(save(model, tmp_path, "case"), threads=1)
    for args, want in zip(case.args, expected(case)):
        assert_close(runtime.run(args), want, case.tolerance)
