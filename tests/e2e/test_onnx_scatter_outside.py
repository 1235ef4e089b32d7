"""A scatter's dropped windows change nothing in ONNX, bit for bit, under every update computation.

The translation selects the elements of the windows kept and scatters them
into the operand itself. These cases put what a wrong write would show at
the places it could go (-0.0, NaN, the extremes at position 0), repeat
indices, and leave the operand or the update empty; each result equals
``jax.jit``'s on the CPU bit for bit (NaN's payload aside).
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

import jaxport  # noqa: E402
from jaxport.adapters.onnx.runtime import OnnxRuntimeModel  # noqa: E402
from tests.helpers.onnx_corpus import Case, expected, save, spec, to_onnx  # noqa: E402

F32, I32 = np.float32, np.int32
NAN, INF = float("nan"), float("inf")
b = jaxport.symbolic_shape("b")[0]
#: Rows of 3 scattered into a (4, 3) operand: the window at (3, 1) and the one at (-1, 0) lie partly outside.
ROWS = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                   scatter_dims_to_operand_dims=(0, 1))
DROP = lax.GatherScatterMode.FILL_OR_DROP
SCATTERS = {"set": lax.scatter, "add": lax.scatter_add, "mul": lax.scatter_mul, "min": lax.scatter_min,
            "max": lax.scatter_max}


def rows(kind: str) -> Any:
    def scatter(x: Any, i: Any, u: Any) -> Any:
        return SCATTERS[kind](x, i, u, ROWS, mode=DROP)
    return scatter


def operand(first: float) -> np.ndarray:
    x = np.arange(12, dtype=F32).reshape(4, 3) - 5
    x[0, 0] = first
    return x


KEPT_AND_DROPPED = np.array([[3, 1], [1, 0], [-1, 0], [2, 0]], I32)
ALL_DROPPED = np.array([[3, 1], [-1, 0], [9, 9]], I32)
UPDATES = np.array([[1.5, -2, 4], [0.5, 8, -3], [7, 7, 7], [-1, 2.5, 6]], F32)

CASES = [
    *(Case(f"{kind}: windows kept and dropped, {first} at position 0", rows(kind),
           [spec((4, 3)), spec((4, 2), I32), spec((4, 3))],
           [[operand(first), KEPT_AND_DROPPED, UPDATES]])
      for kind in SCATTERS for first in (-0.0, NAN, INF, -INF)),
    *(Case(f"{kind}: every window dropped, {first} at position 0", rows(kind),
           [spec((4, 3)), spec((3, 2), I32), spec((3, 3))],
           [[operand(first), ALL_DROPPED, UPDATES[:3]]])
      for kind in SCATTERS for first in (-0.0, NAN, -INF)),
    Case("add keeps -0.0 where -0.0 is added", lambda x, i, u: x.at[i].add(u, mode="drop"),
         [spec((5,)), spec((4,), I32), spec((4,))],
         [[np.full(5, -0.0, F32), np.array([0, 7, 3, -9], I32), np.array([-0.0, 1, -0.0, 2], F32)]]),
    Case("set with repeated indices, equal updates, some dropped", lambda x, i, u: x.at[i].set(u, mode="drop"),
         [spec((6,)), spec((7,), I32), spec((7,))],
         [[np.full(6, NAN, F32), np.array([2, 9, 2, 4, 2, -8, 4], I32), np.array([3, 1, 3, 5, 3, 6, 5], F32)],
          [np.full(6, -0.0, F32), np.array([5, 5, 6, 0, 5, 0, 6], I32), np.array([1, 1, 9, 2, 1, 2, 9], F32)]]),
    Case("set with repeated indices, the last kept write is repeated", lambda x, i, u: x.at[i].set(u, mode="drop"),
         [spec((6,)), spec((5,), I32), spec((5,))],
         [[np.zeros(6, F32), np.array([1, 12, 3, 3, 7], I32), np.array([4, 5, 6, 6, 8], F32)]]),
    Case("min and max with repeated indices, some dropped",
         lambda x, i, u: (x.at[i].min(u, mode="drop"), x.at[i].max(u, mode="drop")),
         [spec((5,)), spec((6,), I32), spec((6,))],
         [[np.array([-0.0, 3, INF, -INF, 1], F32), np.array([1, 1, 8, 4, -7, 1], I32),
           np.array([2, -4, 9, 0.5, 3, 2], F32)]]),
    Case("integer extremes at position 0, every window dropped",
         lambda x, i, u: (x.at[i].min(u, mode="drop"), x.at[i].max(u, mode="drop"), x.at[i].add(u, mode="drop"),
                          x.at[i].multiply(u, mode="drop"), x.at[i].set(u, mode="drop")),
         [spec((4,), I32), spec((2,), I32), spec((2,), I32)],
         [[np.array([np.iinfo(I32).min, 2, 3, np.iinfo(I32).max], I32), np.array([4, -5], I32),
           np.array([7, 9], I32)]]),
    Case("bool and int8 through the widened reduction, some dropped",
         lambda m, x, i: (m.at[i].min(False, mode="drop"), m.at[i].max(True, mode="drop"),
                          x.at[i].max(np.int8(5), mode="drop"), x.at[i].add(np.int8(100), mode="drop")),
         [spec((4,), np.bool_), spec((4,), np.int8), spec((3,), I32)],
         [[np.array([1, 0, 1, 0], bool), np.array([-128, 4, 127, 0], np.int8), np.array([9, 2, -6], I32)],
          [np.array([1, 0, 1, 0], bool), np.array([-128, 4, 127, 0], np.int8), np.array([9, 4, -6], I32)]]),
    Case("uint32 and float16 add and set, some dropped",
         lambda x, h, i: (x.at[i].add(np.uint32(3), mode="drop"), h.at[i].set(np.float16(2), mode="drop"),
                          h.at[i].add(np.float16(-0.0), mode="drop")),
         [spec((3,), np.uint32), spec((3,), np.float16), spec((2,), I32)],
         [[np.array([4294967295, 1, 2], np.uint32), np.array([-0.0, 1, NAN], np.float16), np.array([5, 1], I32)]]),
    *(Case(f"{kind}: an empty update", rows(kind), [spec((4, 3)), spec((0, 2), I32), spec((0, 3))],
           [[operand(-0.0), np.zeros((0, 2), I32), np.zeros((0, 3), F32)]]) for kind in SCATTERS),
    *(Case(f"{kind}: an empty operand", lambda x, i, u, kind=kind: getattr(x.at[i], kind)(u, mode="drop"),
           [spec((0,)), spec((2,), I32), spec((2,))],
           [[np.zeros(0, F32), np.array([0, 1], I32), np.array([1, 2], F32)]])
      for kind in ("set", "add", "multiply", "min", "max")),
    *(Case(f"{kind}: a symbolic operand, every window dropped", rows(kind),
           [spec((b, 3)), spec((2, 2), I32), spec((2, 3))],
           [[operand(first), np.array([[4, 0], [0, 1]], I32), UPDATES[:2]] for first in (-0.0, NAN)]
           + [[operand(-0.0)[:1], np.array([[0, 0], [1, 0]], I32), UPDATES[:2]]])
      for kind in SCATTERS),
]


def bits(x: np.ndarray) -> np.ndarray:
    """``x``'s bits, every NaN alike (XLA and ONNX Runtime need not agree on a NaN's payload or sign)."""
    if x.dtype.kind != "f":
        return x
    return np.where(np.isnan(x), np.array(NAN, x.dtype), x).view(f"u{x.dtype.itemsize}")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_dropped_windows_change_nothing(case: Case, tmp_path: Path) -> None:
    runtime = OnnxRuntimeModel(save(to_onnx(case), tmp_path, "case"), threads=1)
    for args, want in zip(case.args, expected(case)):
        got = runtime.run(args)
        assert [str(g.dtype) for g in got] == [str(w.dtype) for w in want]
        for g, w in zip(got, want):
            np.testing.assert_array_equal(bits(g), bits(w))


def cache_step(cache: Any, positions: Any, update: Any) -> Any:
    """A decode step's write into its cache: row ``r`` at ``positions[r]`` (windows that cannot overlap)."""
    return cache.at[jnp.arange(cache.shape[0])[:, None], positions].set(update)


DISJOINT = [
    Case("a cache row per sequence, positions dropped past the end", cache_step,
         [spec((b, 6, 2)), spec((b, 1), I32), spec((b, 1, 2))],
         [[np.full((3, 6, 2), -0.0, F32), np.array([[5], [6], [-9]], I32), np.array([[[1, -0.0]], [[2, 3]], [[4, 5]]], F32)],
          [np.zeros((1, 6, 2), F32), np.array([[0]], I32), np.array([[[7, 8]]], F32)]]),
    Case("vmapped scatters, each reduction, indices dropped",
         jax.vmap(lambda x, i, u: (x.at[i].set(u, mode="drop"), x.at[i].add(u, mode="drop"),
                                   x.at[i].multiply(u, mode="drop"), x.at[i].min(u, mode="drop"),
                                   x.at[i].max(u, mode="drop"))),
         [spec((3, 4)), spec((3,), I32), spec((3,))],
         [[np.array([[-0.0, 1, 2, NAN]] * 3, F32), np.array([2, 4, -7], I32), np.array([-0.0, 5, 6], F32)]]),
    Case("vmapped scatters of bool, int8 and float16, indices dropped",
         jax.vmap(lambda m, x, h, i: (m.at[i].max(True, mode="drop"), x.at[i].add(np.int8(100), mode="drop"),
                                      h.at[i].set(np.float16(-0.0), mode="drop"))),
         [spec((3, 4), np.bool_), spec((3, 4), np.int8), spec((3, 4), np.float16), spec((3,), I32)],
         [[np.zeros((3, 4), bool), np.full((3, 4), 100, np.int8), np.ones((3, 4), np.float16),
           np.array([1, 9, 3], I32)]]),
]


@pytest.mark.parametrize("case", DISJOINT, ids=[c.name for c in DISJOINT])
def test_disjoint_windows_scatter_in_place_and_equal_jax(case: Case, tmp_path: Path) -> None:
    assert "ScatterND" in {n.op_type for n in to_onnx(case).graph.node}
    test_dropped_windows_change_nothing(case, tmp_path)


def test_a_decode_steps_cache_is_written_by_one_scatter_into_the_operand_itself() -> None:
    model = to_onnx(Case("cache", cache_step, [spec((b, 128, 64)), spec((b, 1), I32), spec((b, 1, 64))], []))
    ops = Counter(n.op_type for n in model.graph.node)
    assert ops["ScatterND"] == 1 and ops["ScatterElements"] == 0 and ops["Identity"] == 0
    (scatter,) = (n for n in model.graph.node if n.op_type == "ScatterND")
    assert scatter.input[0] == "in0" and list(scatter.output) == ["out0"]  # no copy before it, none after


def test_windows_that_may_overlap_are_scattered_in_order_into_the_flat_operand() -> None:
    model = to_onnx(Case("repeated", lambda x, i, u: x.at[i].add(u), [spec((b, 8)), spec((b,), I32), spec((b, 8))], []))
    ops = Counter(n.op_type for n in model.graph.node)
    assert ops["ScatterElements"] == 1 and ops["ScatterND"] == 0
    producers = {o: n for n in model.graph.node for o in n.output}
    (scatter,) = (n for n in model.graph.node if n.op_type == "ScatterElements")
    assert (producers[scatter.input[0]].op_type, producers[scatter.input[0]].input[0]) == ("Reshape", "in0")
