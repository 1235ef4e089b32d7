"""An output array against the one recorded at save, with NumPy: the numbers a numerics check needs.

:func:`zeros` makes the inputs of a call that only checks a model answers,
:func:`shape_of` reads the shape of what a runtime returned, and :func:`compare` finds the largest absolute difference and the largest
recorded magnitude; the verdict from them is the domain's
(:mod:`jaxport.domain.converted.numerics`). Every dtype is compared in float64 or
complex128 (bfloat16 and float8 through ml_dtypes); integers that differ
count as at least 1 apart, whatever rounding to float64 does to them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from jaxport.domain.errors import ArtifactError


def zeros(shape: Sequence[int], dtype: str) -> np.ndarray:
    """Zeros of ``shape`` and of the dtype named ``dtype`` (NumPy's own, else ml_dtypes', as ``bfloat16``).

    >>> zeros((2,), "float32")
    array([0., 0.], dtype=float32)
    >>> str(zeros((1,), "float8_e4m3fn").dtype)
    'float8_e4m3fn'

    Raises:
        ArtifactError: neither NumPy nor ml_dtypes has the dtype (``float0``, a PRNG key's).
    """
    try:
        kind = np.dtype(dtype)
    except TypeError:
        import ml_dtypes  # here: a process whose arrays are all NumPy's own dtypes never loads it

        try:
            kind = np.dtype(getattr(ml_dtypes, dtype))
        except (AttributeError, TypeError):
            raise ArtifactError(f"no array of the dtype {dtype!r} can be made (NumPy and ml_dtypes lack it)") from None
    return np.zeros(tuple(shape), dtype=kind)


def shape_of(array: Any) -> tuple[int, ...]:
    """The shape of an array that a runtime returned, as NumPy reads it.

    >>> shape_of([[1, 2, 3]])
    (1, 3)
    """
    return tuple(np.asarray(array).shape)


def compare(got: Any, want: np.ndarray) -> tuple[float, float, str | None]:
    """(largest absolute error, largest finite magnitude of ``want``, why they cannot be compared).

    NaN matches NaN, and an infinity the same infinity; any other difference
    involving a NaN or an infinity is an infinite error.

    >>> compare(np.array([1.0, 2.5], np.float32), np.array([1.0, 2.0], np.float32))
    (0.5, 2.0, None)
    >>> compare(np.array([1, 2]), np.array([1, 2, 3]))
    (0.0, 0.0, 'the runtime returned shape (2,) where the example has (3,)')
    """
    got = np.asarray(got)
    if got.shape != want.shape:
        return 0.0, 0.0, f"the runtime returned shape {got.shape} where the example has {want.shape}"
    if got.dtype != want.dtype:
        return 0.0, 0.0, f"the runtime returned dtype {got.dtype} where the example has {want.dtype}"
    if want.size == 0:
        return 0.0, 0.0, None
    wide = np.complex128 if want.dtype.kind == "c" else np.float64
    g, w = got.reshape(-1).astype(wide), want.reshape(-1).astype(wide)
    with np.errstate(invalid="ignore", over="ignore"):
        error = np.abs(g - w)
    same = (got.reshape(-1) == want.reshape(-1)) | (np.isnan(g) & np.isnan(w))
    error[same] = 0.0
    error[np.isnan(error)] = np.inf
    if want.dtype.kind in "biu":
        error[~same] = np.maximum(error[~same], 1.0)
    magnitude = np.abs(w[np.isfinite(w)])
    return float(error.max()), float(magnitude.max()) if magnitude.size else 0.0, None


def host_arrays(leaves: Iterable[Any]) -> list[np.ndarray]:
    """Each leaf (an array of any library, a scalar, a nested list) as a NumPy array on the host."""
    return [np.asarray(leaf) for leaf in leaves]
