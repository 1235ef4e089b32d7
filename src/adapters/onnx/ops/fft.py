"""``stablehlo.fft`` as ONNX's ``DFT`` (opset 20's form: length and axis as inputs), complex values as pairs.

The four kinds over the 1 to 3 trailing axes, one ``DFT`` per axis:

- ``FFT`` and ``IFFT``: a complex ``DFT`` (``inverse`` for IFFT, which
  divides by each axis's length, as XLA's).
- ``RFFT``: a one-sided ``DFT`` of the real operand along the last axis
  (``n // 2 + 1`` values), then complex ``DFT``s along the others.
- ``IRFFT``: inverse complex ``DFT``s along the leading axes, then along the
  last the full spectrum of length ``n`` rebuilt from its ``n // 2 + 1``
  values (``X[n - k] = conj(X[k])``; the imaginary parts of the 0th and,
  for even ``n``, the ``n / 2``-th value are not read, as XLA's ``c2r``
  reads none), its inverse ``DFT``, and the real part.

ONNX Runtime's ``DFT`` computes in the parts' own type (radix 2 where the
length is a power of two, directly otherwise): the results equal XLA's
within float32's rounding of a sum over the axis (the tests: 1e-4 relative
and absolute on values of magnitude about 1, lengths up to 64). A NaN or an
infinity in the operand gives NaN wherever XLA's does, and also in parts
XLA's leaves finite (XLA's FFT skips the trivial twiddle factors); an
exactly real value's imaginary part may be ``-0.0`` or a rounding error
where XLA's is ``+0.0`` (an angle of ``-pi`` for ``pi``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxport.adapters.onnx.builder import GraphBuilder, int_list, tensor_shape
from .common import Translation
from .complex import complex_part, join, parts, zeros_like


def _dft(b: GraphBuilder, x: str, length: int, axis: int, *, inverse: bool = False, onesided: bool = False) -> str:
    """One ``DFT`` of a pair (or, ``onesided``, real ``[..., 1]``) tensor along ``axis`` (negative)."""
    return b.one("DFT", [x, b.constant(np.array(length, np.int64), "length"),
                         b.constant(np.array(axis, np.int64), "axis")],
                 inverse=int(inverse), onesided=int(onesided))


def _piece(b: GraphBuilder, x: str, start: int, stop: int) -> str:
    """``x[..., start:stop]``."""
    return b.one("Slice", [x, b.int64s([start]), b.int64s([stop]), b.int64s([-1])])


def _flipped(b: GraphBuilder, x: str) -> str:
    return b.one("Slice", [x, b.int64s([-1]), b.int64s([np.iinfo(np.int64).min]), b.int64s([-1]), b.int64s([-1])])


def _hermitian(b: GraphBuilder, half: str, n: int, dtype: np.dtype[Any]) -> str:
    """The full spectrum (a pair tensor of length ``n`` along its signal axis) whose first ``n // 2 + 1``
    values are ``half``'s, with zero imaginary parts at 0 and (even ``n``) ``n / 2``."""
    real, imag = parts(b, half)
    middle = (n + 1) // 2  # values 1 .. middle - 1 have a mirror image
    zero = zeros_like(b, _piece(b, real, 0, 1), dtype)
    reals = [_piece(b, real, 0, 1)]
    imags = [zero]
    if middle > 1:
        reals.append(_piece(b, real, 1, middle))
        imags.append(_piece(b, imag, 1, middle))
    if n % 2 == 0 and n > 0:
        reals.append(_piece(b, real, n // 2, n // 2 + 1))
        imags.append(zero)
    if middle > 1:
        reals.append(_flipped(b, _piece(b, real, 1, middle)))
        imags.append(b.one("Neg", [_flipped(b, _piece(b, imag, 1, middle))]))
    both = [b.one("Concat", p, axis=-1) if len(p) > 1 else p[0] for p in (reals, imags)]
    return join(b, both[0], both[1])


def _fft(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    kind = str(op.attributes["fft_type"]).rstrip(">").split()[-1].upper()
    lengths = int_list(op.attributes["fft_length"])
    if not 1 <= len(lengths) <= 3 or 0 in lengths:
        b.refuse(f"an FFT of lengths {lengths} (ONNX's DFT: 1 to 3 axes of at least one value)")
    k = len(lengths)
    axes = [-(k - j) - 1 for j in range(k)]  # the signal axes of a pair tensor, in order
    x = args[0]
    if kind in ("FFT", "IFFT"):
        for length, axis in zip(lengths, axes):
            x = _dft(b, x, length, axis, inverse=kind == "IFFT")
        return [x]
    if kind == "RFFT":
        x = _dft(b, b.one("Unsqueeze", [x, b.int64s([-1])]), lengths[-1], -2, onesided=True)
        for length, axis in zip(lengths[:-1], axes[:-1]):
            x = _dft(b, x, length, axis)
        return [x]
    if kind == "IRFFT":
        for length, axis in zip(lengths[:-1], axes[:-1]):
            x = _dft(b, x, length, axis, inverse=True)
        if tensor_shape(op.operands[0])[-1] != lengths[-1] // 2 + 1:
            b.refuse("an IRFFT whose operand is not n // 2 + 1 values long")
        dtype = complex_part(op.operands[0])
        assert dtype is not None  # IRFFT's operand is complex
        full = _dft(b, _hermitian(b, x, lengths[-1], dtype), lengths[-1], -2, inverse=True)
        return [parts(b, full)[0]]
    b.refuse(f"an FFT of the kind {kind}")


#: ``stablehlo.fft`` has a complex operand or result: a :data:`.complex.COMPLEX` translation.
COMPLEX: dict[str, Translation] = {"stablehlo.fft": _fft}

#: No operation of real values is this module's.
TABLE: dict[str, Translation] = {}
