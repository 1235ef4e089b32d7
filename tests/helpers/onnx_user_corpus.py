"""A corpus of user-level functions (``jax.numpy``, ``lax``, ``jax.nn``, ``jax.scipy``, ``jnp.linalg``) for ONNX.

Each function is written as a new user would write it, exported with
jaxport, translated to ONNX as ``jaxport convert --to onnx`` does (up to the
newest opset), run on ONNX Runtime through jaxport's runtime adapter and
compared with ``jax.jit`` of the function. :func:`classify` sorts it into one
of four outcomes: ``matched``, ``refused`` (jaxport's typed
:class:`~jaxport.errors.UnsupportedOperationError`, naming the operation),
``wrong`` (a result that differs from JAX's) and ``untyped`` (any other
error). A matched result whose zeros differ in sign from JAX's somewhere is
counted apart (:data:`ZERO_SIGNS`), not as wrong. The cases live in the family modules ``onnx_user_corpus_*``; the
inputs include edge values (NaN, infinities, signed zeros, subnormals where
XLA's flushing them to zero cannot matter, empty and batched shapes).

A run of ``make test`` checks one slice of the corpus (:func:`chosen_slice`:
``k/n``, every n-th case from the k-th, rotating with the day, or as the
environment variable ``JAXPORT_ONNX_CORPUS_SLICE`` says); ``make corpus`` the whole.
"""

from __future__ import annotations

import datetime
import os
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import numpy as np

import jaxport
from jaxport.adapters.onnx.translate import translate
from jaxport.domain.targets.onnx import NEWEST_OPSET
from .onnx_corpus import Case, assert_close, expected, save

F32, I32, U32 = np.float32, np.int32, np.uint32
#: The environment variable choosing the slice (``k/n``, 0 <= k < n).
SLICE_VARIABLE = "JAXPORT_ONNX_CORPUS_SLICE"
#: Slices of the corpus, one per run of ``make test``.
SLICES = 8
#: NaN of both signs, both infinities, both zeros, ordinary values and ties.
EDGES = np.array([np.nan, -np.inf, -3.5, -1.0, -0.5, -0.0, 0.0, 0.25, 0.5, 1.0, 2.5, 3.0, np.inf, -np.nan], F32)
#: The finite edges.
FINITE = np.array([-3.5, -1.0, -0.5, -0.0, 0.0, 0.25, 0.5, 1.0, 2.5, 3.0, 7.25, -100.0], F32)
#: Subnormals among ordinary values, for functions continuous at zero only: XLA's CPU flushes subnormals
#: to zero, ONNX Runtime does not, so the two differ where a function jumps at zero (``x < 0``, ``log``).
SUBNORMALS = np.array([1e-40, -1e-42, 1.4e-45, -1.17e-38, 0.0, -0.0, 0.5, -2.0], F32)
#: Values in (0, 1) and at its ends.
UNIT = np.array([0.0, 1e-6, 0.1, 0.25, 0.5, 0.75, 0.9, 0.999, 1.0, np.nan], F32)


def rng(seed: int) -> np.random.Generator:
    """A family module's generator (its inputs do not depend on which slice runs)."""
    return np.random.default_rng(seed)


def arrays(*shape: int, seed: int = 0, scale: float = 1.0, dtype: Any = F32) -> np.ndarray:
    """Normal samples of ``shape`` (``scale`` times), deterministic in ``seed``."""
    return (np.random.default_rng(seed).normal(size=shape) * scale).astype(dtype)


def ints(low: int, high: int, *shape: int, seed: int = 0, dtype: Any = I32) -> np.ndarray:
    """Integers in ``[low, high)`` of ``shape``, deterministic in ``seed``."""
    return np.random.default_rng(seed).integers(low, high, size=shape).astype(dtype)


def case(name: str, function: Callable[..., Any], *args: Any, tolerance: float | None = None,
         more: Sequence[Sequence[Any]] = ()) -> Case:
    """A case exported with the shapes and dtypes of ``args`` and run on ``args`` (and each of ``more``)."""
    first = [np.asarray(a) for a in args]
    specs = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in first]
    return Case(name, function, specs, [first, *([np.asarray(a) for a in m] for m in more)], tolerance=tolerance)


def to_onnx(case: Case) -> Any:
    """The case exported and translated as ``jaxport convert --to onnx`` would (up to the newest opset)."""
    record = jaxport.export(jax.jit(case.function))(*case.specs).record
    return translate(record, input_names=[f"in{i}" for i in range(len(record.in_avals))],
                     output_names=[f"out{j}" for j in range(len(record.out_avals))], max_opset=NEWEST_OPSET)


@dataclass(frozen=True)
class Outcome:
    """What happened to one case: ``kind`` is matched, refused, wrong or untyped; ``detail`` says more."""

    name: str
    kind: str
    detail: str = ""


def classify(case: Case, directory: Path) -> Outcome:
    """``case`` converted, run by ONNX Runtime and compared with ``jax.jit`` (JAX's own errors propagate)."""
    from jaxport.adapters.onnx.runtime import OnnxRuntimeModel
    from jaxport.errors import UnsupportedOperationError

    want = expected(case)
    try:
        model = to_onnx(case)
    except UnsupportedOperationError as exc:
        return Outcome(case.name, "refused", exc.operation)
    except Exception as exc:  # noqa: BLE001  # every other error is one the corpus counts
        return Outcome(case.name, "untyped", f"converting: {type(exc).__name__}: {exc}"[:400])
    try:
        runtime = OnnxRuntimeModel(save(model, directory, "case"), threads=1)
        got = [runtime.run(list(args)) for args in case.args]
    except Exception as exc:  # noqa: BLE001
        return Outcome(case.name, "untyped", f"running: {type(exc).__name__}: {exc}"[:400])
    signs = ""
    for i, (g, w) in enumerate(zip(got, want)):
        try:
            assert_close(g, w, case.tolerance)
        except AssertionError as exc:
            return Outcome(case.name, "wrong", f"argument set {i}: {exc}"[:600])
        try:
            assert_zero_signs(g, w)
        except AssertionError as exc:
            signs = signs or f"argument set {i}: {exc}"
    return Outcome(case.name, "matched", signs)


def assert_zero_signs(got: Sequence[np.ndarray], want: Sequence[np.ndarray]) -> None:
    """Where a float result and JAX's are both zero, their signs agree (``1 / x`` would tell them apart)."""
    for j, (g, w) in enumerate(zip(got, want)):
        if w.dtype.kind == "f" or str(w.dtype) == "bfloat16":
            g64, w64 = g.astype(np.float64), w.astype(np.float64)
            both = (g64 == 0) & (w64 == 0)
            differ = both & (np.signbit(g64) != np.signbit(w64))
            assert not differ.any(), f"output {j}: zeros of another sign at {np.argwhere(differ).tolist()[:8]}"


#: Why a zero's sign is counted apart: ONNX Runtime's CPU ``Where`` (1.32) gives +0.0 for a selected -0.0 of
#: its first branch (microsoft/onnxruntime#32191, open), and many translations select with ``Where``.
ZERO_SIGNS = ("ONNX Runtime's Where turns a zero of its first branch into +0.0 (onnxruntime#32191), its Max/Min "
              "return the second operand on a tie of zeros; docs/developers/onnx-corpus.md says why these remain")


@dataclass
class Tally:
    """The counts of a run of the corpus."""

    outcomes: list[Outcome] = field(default_factory=list)

    def counts(self) -> Counter[str]:
        return Counter(o.kind for o in self.outcomes)

    def refused_by_operation(self) -> Counter[str]:
        return Counter(o.detail for o in self.outcomes if o.kind == "refused")

    def zero_signs(self) -> list[Outcome]:
        """The matched whose zeros differ in sign somewhere (not counted wrong: see :data:`ZERO_SIGNS`)."""
        return [o for o in self.outcomes if o.kind == "matched" and o.detail]

    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.kind in ("wrong", "untyped")]

    def report(self) -> str:
        counts = self.counts()
        lines = [f"{len(self.outcomes)} functions: " + ", ".join(
            f"{counts[k]} {k}" for k in ("matched", "refused", "wrong", "untyped"))]
        lines += [f"  refused {n}x: {op}" for op, n in sorted(self.refused_by_operation().items())]
        if self.zero_signs():
            lines += [f"  {len(self.zero_signs())} matched with a zero of another sign ({ZERO_SIGNS}): "
                      + ", ".join(o.name for o in self.zero_signs())]
        lines += [f"  {o.kind}: {o.name}: {o.detail}" for o in self.failures()]
        return "\n".join(lines)


def chosen_slice(environ: dict[str, str] | None = None, today: datetime.date | None = None) -> tuple[int, int]:
    """``(k, n)``: the slice of this run, from ``JAXPORT_ONNX_CORPUS_SLICE=k/n``, else the day's of ``SLICES``."""
    text = (os.environ if environ is None else environ).get(SLICE_VARIABLE, "")
    if not text:
        return (today or datetime.date.today()).toordinal() % SLICES, SLICES
    k, _, n = text.partition("/")
    if not (k.isdigit() and n.isdigit() and 0 <= int(k) < int(n)):
        raise ValueError(f"{SLICE_VARIABLE}={text!r}: expected k/n with 0 <= k < n, say 3/8")
    return int(k), int(n)


def slice_of(cases: Sequence[Case], k: int, n: int) -> list[Case]:
    """Every ``n``-th case from the ``k``-th (so that a slice holds every family)."""
    return list(cases[k::n])
