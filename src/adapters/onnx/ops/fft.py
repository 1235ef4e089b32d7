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
length is a power of two, directly otherwise: a direct sum over more than
:data:`DIRECT_UP_TO` values would lose about ``n`` ulps, so those lengths go
through Bluestein's algorithm over power-of-two ``DFT``s). The results equal
XLA's within a few float32 ulps of the largest value (measured: 5e-7 of it
up to 4,099 values; the tests: 1e-4 relative and absolute). A NaN or an
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
from .common import Translation, reversed_along
from .complex import complex_part, join, parts, times, zeros_like


def _dft(b: GraphBuilder, x: str, length: int, axis: int, *, inverse: bool = False, onesided: bool = False) -> str:
    """One ``DFT`` of a pair (or, ``onesided``, real ``[..., 1]``) tensor along ``axis`` (negative)."""
    return b.one("DFT", [x, b.constant(np.array(length, np.int64), "length"),
                         b.constant(np.array(axis, np.int64), "axis")],
                 inverse=int(inverse), onesided=int(onesided))


#: Longer signals of a length other than a power of two are transformed by Bluestein's algorithm.
DIRECT_UP_TO = 64


def _transform(b: GraphBuilder, x: str, length: int, axis: int, dtype: np.dtype[Any], inverse: bool = False) -> str:
    """The DFT of a pair tensor along ``axis``: ONNX's ``DFT`` where it is accurate (a power of two, radix 2;
    up to :data:`DIRECT_UP_TO` values, summed directly), else Bluestein's algorithm over a power-of-two
    ``DFT`` (ONNX Runtime's direct sum of a long signal loses about ``length`` ulps, its twiddle factors'
    phases rounded in float32): ``X[k] = c[k] sum_n x[n] c[n] conj(c[k - n])``, ``c[m] = exp(-+i pi m^2 / n)``,
    the convolution a product of power-of-two transforms, the chirps computed in float64 here."""
    if length <= DIRECT_UP_TO or length & (length - 1) == 0:
        return _dft(b, x, length, axis, inverse=inverse)
    size = 1 << (2 * length - 2).bit_length()  # a power of two >= 2 length - 1
    m = np.arange(length, dtype=np.int64)
    chirp = np.exp((1j if inverse else -1j) * np.pi * ((m * m) % (2 * length)) / length)
    kernel = np.zeros(size, np.complex128)
    kernel[:length] = np.conj(chirp)
    kernel[size - length + 1:] = np.conj(chirp[1:])[::-1]
    trailing = [1] * (-axis - 2)

    def pairs(values: np.ndarray) -> str:
        return b.constant(np.stack([values.real, values.imag], -1).astype(dtype).reshape(-1, *trailing, 2), "chirp")

    padded = b.one("Pad", [times(b, x, pairs(chirp)), b.int64s([0, size - length]), b.scalar(0, dtype),
                           b.int64s([axis])])
    convolved = _dft(b, times(b, _dft(b, padded, size, axis), pairs(np.fft.fft(kernel))), size, axis, inverse=True)
    start, stop = b.int64s([0]), b.int64s([length])
    result = times(b, b.one("Slice", [convolved, start, stop, b.int64s([axis])]), pairs(chirp))
    return b.one("Mul", [result, b.scalar(1 / length, dtype)]) if inverse else result


def _piece(b: GraphBuilder, x: str, start: int, stop: int) -> str:
    """``x[..., start:stop]``."""
    return b.one("Slice", [x, b.int64s([start]), b.int64s([stop]), b.int64s([-1])])


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
        reals.append(reversed_along(b, _piece(b, real, 1, middle), [-1]))
        imags.append(b.one("Neg", [reversed_along(b, _piece(b, imag, 1, middle), [-1])]))
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
    dtype = complex_part(op.results[0] if kind != "IRFFT" else op.operands[0])
    assert dtype is not None  # an FFT has a complex operand or result
    if kind in ("FFT", "IFFT"):
        for length, axis in zip(lengths, axes):
            x = _transform(b, x, length, axis, dtype, inverse=kind == "IFFT")
        return [x]
    if kind == "RFFT":
        n = lengths[-1]
        if n <= DIRECT_UP_TO or n & (n - 1) == 0:
            x = _dft(b, b.one("Unsqueeze", [x, b.int64s([-1])]), n, -2, onesided=True)
        else:
            x = _transform(b, join(b, x, zeros_like(b, x, dtype)), n, -2, dtype)
            x = b.one("Slice", [x, b.int64s([0]), b.int64s([n // 2 + 1]), b.int64s([-2])])
        for length, axis in zip(lengths[:-1], axes[:-1]):
            x = _transform(b, x, length, axis, dtype)
        return [x]
    if kind == "IRFFT":
        for length, axis in zip(lengths[:-1], axes[:-1]):
            x = _transform(b, x, length, axis, dtype, inverse=True)
        if tensor_shape(op.operands[0])[-1] != lengths[-1] // 2 + 1:
            b.refuse("an IRFFT whose operand is not n // 2 + 1 values long")
        full = _transform(b, _hermitian(b, x, lengths[-1], dtype), lengths[-1], -2, dtype, inverse=True)
        return [parts(b, full)[0]]
    b.refuse(f"an FFT of the kind {kind}")


#: ``stablehlo.fft`` has a complex operand or result: a :data:`.complex.COMPLEX` translation.
COMPLEX: dict[str, Translation] = {"stablehlo.fft": _fft}
