"""The singular vectors of the one-sided Jacobi SVD (:mod:`.svd`), where the results do not depend on their signs.

Used only where :func:`.svd_invariance.vectors_invariant` proves that the
module's results do not change under ``U -> U Q``, ``VT -> Q^T VT`` (``Q``
orthogonal and commuting with ``diag(s)``) nor with the columns of
``s_i = 0`` (``pinv``, ``lstsq``): any accurate vectors then give LAPACK's
results up to rounding. The Jacobi sweeps rotate the columns of the (scaled)
matrix ``W`` and, alike, those of ``V`` (starting from the identity), so that
``W_final = W V`` has orthogonal columns of norms ``s``:

- the columns are put in the order of the values, largest first (LAPACK's);
- ``U``'s column ``i`` is ``W_final``'s divided by its norm, computed on the
  column divided by its largest magnitude (no underflow of the squares); a
  column of zeros (``s_i = 0``) stays zeros: finite, and the proof requires
  that the results multiply it by zero;
- a wide matrix was transposed: its ``U`` is the sweeps' ``V`` and its
  ``VT`` the transpose of their ``U``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jaxport.adapters.onnx.builder import GraphBuilder
from .common import Translation


def jacobi_vectors(b: GraphBuilder, stacked: str, order: str, rank: int, big: int, wide: bool,
                   dtype: np.dtype[Any]) -> tuple[str, str]:
    """``U`` and ``VT`` from the sweeps' ``[W; V]`` (``stacked``, ``[..., big + k, k]``) and the values' ``order``
    (``[..., k]``, TopK's indices)."""
    rows = rank - 2
    index = b.one("Expand", [b.one("Unsqueeze", [order, b.int64s([rows])]), b.one("Shape", [stacked])])
    ordered = b.one("GatherElements", [stacked, index], axis=rank - 1)
    w = b.one("Slice", [ordered, b.int64s([0]), b.int64s([big]), b.int64s([rows])])
    v = b.one("Slice", [ordered, b.int64s([big]), b.int64s([np.iinfo(np.int64).max]), b.int64s([rows])])
    axis = b.int64s([rows])
    largest = b.one("ReduceMax", [b.one("Abs", [w]), axis], keepdims=1)
    one = b.scalar(1, dtype)
    empty = b.one("Equal", [largest, b.scalar(0, dtype)])
    t = b.one("Div", [w, b.one("Where", [empty, one, largest])])
    norm = b.one("Sqrt", [b.one("ReduceSum", [b.one("Mul", [t, t]), axis], keepdims=1)])
    u = b.one("Div", [t, b.one("Where", [empty, one, norm])])
    transpose = [*range(rank - 2), rank - 1, rank - 2]
    if wide:
        return v, b.one("Transpose", [u], perm=transpose)
    return u, b.one("Transpose", [v], perm=transpose)


#: No operation of its own: :mod:`.svd`'s ``gesdd`` calls :func:`jacobi_vectors`.
TABLE: dict[str, Translation] = {}
