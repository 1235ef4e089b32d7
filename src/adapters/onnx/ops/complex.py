"""Complex values inside a function, as (real, imaginary) pairs: a complex tensor of shape ``S`` is a float
tensor of shape ``S + (2,)`` (ONNX's ``DFT`` form; ONNX Runtime has no complex tensors).

A function's inputs and outputs stay real (the ONNX target's plan refuses
complex ones); the walk hands an operation with a complex operand or
result to :data:`COMPLEX`, and refuses
one not there by name. What is here: ``real``, ``imag``, ``complex``,
``convert`` to complex (and between complex widths), ``add``, ``subtract``,
``negate``, ``multiply`` (XLA's formula, ``(ac - bd, ad + bc)``),
``divide`` (XLA's: Smith's algorithm and its corner cases of zeros and
infinities), sums (``reduce`` with an ``add`` body), constants, the square
root and product of constants (JAX's ``norm="ortho"``, computed by NumPy
here), and the shape operations of static shapes (``broadcast_in_dim``,
``reshape``, ``transpose``, ``slice``, ``concatenate``, ``reverse``,
``pad`` without interior padding, ``select``). Products of complex
matrices, comparisons, the functions of complex values (``exp``, ``log``,
``sqrt`` at run time) are refused.

``stablehlo.fft`` is ONNX's ``DFT`` (opset 20's form: length and axis as inputs) on the pairs.

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
from jaxlib.mlir import ir

from jaxport.adapters.onnx.builder import F32, F64, GraphBuilder, dense_elements, int_list, tensor_dtype, tensor_shape
from . import shape, window
from .common import Translation, element, reducer, reversed_along, same, stacked

_PARTS: dict[str, np.dtype[Any]] = {"f32": F32, "f64": F64}


def complex_part(value: Any) -> np.dtype[Any] | None:
    """The float dtype of a ``complex<f32>`` or ``complex<f64>`` tensor value's parts, else None."""
    element = ir.RankedTensorType(value.type).element_type if isinstance(value.type, ir.RankedTensorType) else None
    if not isinstance(element, ir.ComplexType):
        return None
    return _PARTS.get(str(element.element_type))


def is_complex(value: Any) -> bool:
    """Whether ``value`` is a tensor of complex elements (of any part type)."""
    return isinstance(value.type, ir.RankedTensorType) and isinstance(value.type.element_type, ir.ComplexType)


def parts(b: GraphBuilder, pair: str) -> tuple[str, str]:
    """The real and imaginary parts of a pair tensor."""
    return element(b, pair, 0, -1), element(b, pair, 1, -1)


def zeros_like(b: GraphBuilder, x: str, dtype: np.dtype[Any]) -> str:
    """Zeros of ``x``'s shape (not ``x * 0``, which is NaN where ``x`` is not finite)."""
    return b.one("Expand", [b.scalar(0, dtype), b.one("Shape", [x])])


def _static(b: GraphBuilder, value: Any) -> list[int]:
    shape = tensor_shape(value)
    if None in shape:
        b.refuse("a shape operation on complex values of a symbolic shape")
    return [int(d) for d in shape if d is not None]


def complex_values(b: GraphBuilder, op: Any) -> np.ndarray:
    """The elements of a complex ``stablehlo.constant`` as pairs (float array of shape ``S + (2,)``).

    They are read from the operation's text (:func:`~jaxport.adapters.onnx.builder.dense_elements`: the
    numbers as ``(re,im)``), one pair for a splat.
    """
    value = op.results[0]
    dtype = complex_part(value)
    assert dtype is not None  # the caller's operation has a complex result
    shape = _static(b, value)
    body = op.operation.get_asm(large_elements_limit=None)
    try:
        flat = dense_elements(body, dtype, dtype.type)
    except ValueError:
        b.refuse(f"a complex constant written as {body[:60]}")
    count = int(np.prod(shape, dtype=np.int64))
    if flat.size == 2 and count != 1:
        flat = np.tile(flat, count)
    return flat.reshape(*shape, 2)


def _convert(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    source, target = complex_part(op.operands[0]), complex_part(op.results[0])
    if target is None:
        b.refuse("a conversion of complex values to real ones (take real or imag first)")
    if source is not None:
        return [b.cast(args[0], target, source)]
    real = b.cast(args[0], target, tensor_dtype(op.operands[0]))
    return [stacked(b, [real, zeros_like(b, real, target)])]


def times(b: GraphBuilder, x: str, y: str) -> str:
    """The product of two pair tensors (broadcast), as XLA's: ``(ac - bd, ad + bc)``."""
    (a, c), (d, e) = parts(b, x), parts(b, y)
    real = b.one("Sub", [b.one("Mul", [a, d]), b.one("Mul", [c, e])])
    imag = b.one("Add", [b.one("Mul", [a, e]), b.one("Mul", [c, d])])
    return stacked(b, [real, imag])


def _divide(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    """XLA's complex division: Smith's algorithm, and where that gives (NaN, NaN) its three corner cases (a
    zero denominator, an infinite numerator over a finite denominator, a finite one over an infinite one)."""
    dtype = complex_part(op.results[0])
    assert dtype is not None  # a complex division
    (ar, ai), (br, bi) = parts(b, args[0]), parts(b, args[1])

    def f(op_type: str, *inputs: str) -> str:
        return b.one(op_type, list(inputs))

    zero, one, inf = b.scalar(0, dtype), b.scalar(1, dtype), b.scalar(np.inf, dtype)
    br_abs, bi_abs, ar_abs, ai_abs = (f("Abs", v) for v in (br, bi, ar, ai))
    ratio_ri, ratio_ir = f("Div", br, bi), f("Div", bi, br)
    denom_ri, denom_ir = f("Add", bi, f("Mul", br, ratio_ri)), f("Add", br, f("Mul", ratio_ir, bi))
    smaller = f("Less", br_abs, bi_abs)
    cr = f("Where", smaller, f("Div", f("Add", f("Mul", ratio_ri, ar), ai), denom_ri),
           f("Div", f("Add", f("Mul", ratio_ir, ai), ar), denom_ir))
    ci = f("Where", smaller, f("Div", f("Sub", f("Mul", ratio_ri, ai), ar), denom_ri),
           f("Div", f("Sub", ai, f("Mul", ratio_ir, ar)), denom_ir))
    nan = f("And", f("IsNaN", cr), f("IsNaN", ci))
    # 1. A zero denominator (a numerator not all NaN): infinities signed by the denominator's real part
    # (1 / +-0 is +-inf) times the numerator.
    zero_denominator = f("And", f("And", f("Equal", br_abs, zero), f("Equal", bi_abs, zero)),
                         f("Not", f("And", f("IsNaN", ar), f("IsNaN", ai))))
    signed_inf = f("Div", one, br)
    case1 = (f("Mul", signed_inf, ar), f("Mul", signed_inf, ai))
    # 2. An infinite numerator, a finite denominator.
    ar_inf, ai_inf = f("Equal", ar_abs, inf), f("Equal", ai_abs, inf)
    br_inf, bi_inf = f("Equal", br_abs, inf), f("Equal", bi_abs, inf)
    finite_b = f("And", f("Not", f("Or", br_inf, f("IsNaN", br))), f("Not", f("Or", bi_inf, f("IsNaN", bi))))
    finite_a = f("And", f("Not", f("Or", ar_inf, f("IsNaN", ar))), f("Not", f("Or", ai_inf, f("IsNaN", ai))))
    inf_over_finite = f("And", f("Or", ar_inf, ai_inf), finite_b)
    sr, si = f("Where", ar_inf, f("Sign", ar), zero), f("Where", ai_inf, f("Sign", ai), zero)
    case2 = (f("Mul", inf, f("Add", f("Mul", sr, br), f("Mul", si, bi))),
             f("Mul", inf, f("Sub", f("Mul", si, br), f("Mul", sr, bi))))
    # 3. A finite numerator, an infinite denominator.
    finite_over_inf = f("And", f("Or", br_inf, bi_inf), finite_a)
    tr, ti = f("Where", br_inf, f("Sign", br), zero), f("Where", bi_inf, f("Sign", bi), zero)
    case3 = (f("Mul", zero, f("Add", f("Mul", ar, tr), f("Mul", ai, ti))),
             f("Mul", zero, f("Sub", f("Mul", ai, tr), f("Mul", ar, ti))))
    result = []
    for i, smith in enumerate((cr, ci)):
        corner = f("Where", zero_denominator, case1[i], f("Where", inf_over_finite, case2[i],
                                                          f("Where", finite_over_inf, case3[i], smith)))
        result.append(f("Where", nan, corner, smith))
    return [stacked(b, result)]


def _known(b: GraphBuilder, args: Sequence[str], what: str) -> list[np.ndarray]:
    """The values of constant pair operands as complex arrays, or the refusal naming ``what``."""
    if not all(a in b.known for a in args):
        b.refuse(f"{what} of complex values computed at run time (only of constants)")
    return [b.known[a][..., 0] + 1j * b.known[a][..., 1] for a in args]


def _pairs_of(b: GraphBuilder, value: np.ndarray, dtype: np.dtype[Any]) -> str:
    return b.constant(np.stack([value.real, value.imag], axis=-1).astype(dtype), "complex")


def _sqrt(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    """The square root of a complex constant (JAX's ``norm="ortho"``), computed here."""
    dtype = complex_part(op.results[0])
    assert dtype is not None
    (x,) = _known(b, args, "a square root")
    return [_pairs_of(b, np.sqrt(x), dtype)]


def _reduce(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    """A sum of complex values (parts summed apart), or a product of constants (computed here)."""
    dtype = complex_part(op.results[0])
    kind = reducer(op)
    if len(args) != 2 or dtype is None or kind not in ("Add", "Mul"):
        b.refuse("a reduction of complex values other than one sum or product")
    dims = int_list(op.attributes["dimensions"])
    if kind == "Mul":
        x, init = _known(b, args, "a product")
        return [_pairs_of(b, np.prod(x, axis=tuple(dims)) * init, dtype)]
    total = b.one("ReduceSum", [args[0], b.int64s(dims)], keepdims=0) if dims else args[0]
    return [b.one("Add", [total, args[1]])]


def _broadcast_in_dim(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    dims = int_list(op.attributes["broadcast_dimensions"])
    result = _static(b, op.results[0])
    return [shape.broadcast(b, args[0], len(dims), dims, len(result), b.int64s([*result, 2]), pairs=True)]


def _pad(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    if any(int_list(op.attributes["interior_padding"])):
        b.refuse("interior padding of complex values")
    low, high = int_list(op.attributes["edge_padding_low"]), int_list(op.attributes["edge_padding_high"])
    (real, imag), (pad_real, pad_imag) = parts(b, args[0]), parts(b, args[1])
    pads, axes = b.int64s([*low, *high]), b.int64s(list(range(len(low))))
    return [stacked(b, [b.one("Pad", [real, pads, pad_real, axes]), b.one("Pad", [imag, pads, pad_imag, axes])])]


def _select(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    condition = args[0]
    if tensor_shape(op.operands[0]):
        condition = b.one("Unsqueeze", [condition, b.int64s([-1])])
    return [b.one("Where", [condition, args[1], args[2]])]


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
    return stacked(b, both)


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
            x = _transform(b, stacked(b, [x, zeros_like(b, x, dtype)]), n, -2, dtype)
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


#: Complex operations (an operand or a result complex) -> translation on pairs.
COMPLEX: dict[str, Translation] = {
    "stablehlo.constant": lambda b, op, args: [b.constant(complex_values(b, op), "complex")],
    "stablehlo.real": lambda b, op, args: [parts(b, args[0])[0]],
    "stablehlo.imag": lambda b, op, args: [parts(b, args[0])[1]],
    "stablehlo.complex": lambda b, op, args: [stacked(b, args)],
    "stablehlo.convert": _convert,
    "stablehlo.add": same("Add"),
    "stablehlo.subtract": same("Sub"),
    "stablehlo.negate": same("Neg"),
    "stablehlo.multiply": lambda b, op, args: [times(b, args[0], args[1])],
    "stablehlo.divide": _divide,
    "stablehlo.sqrt": _sqrt,
    "stablehlo.reduce": _reduce,
    "stablehlo.broadcast_in_dim": _broadcast_in_dim,
    "stablehlo.reshape": lambda b, op, args: [
        b.one("Reshape", [args[0], b.int64s([*_static(b, op.results[0]), 2])], allowzero=1)],
    "stablehlo.transpose": lambda b, op, args: [
        b.one("Transpose", args, perm=[*int_list(op.attributes["permutation"]), len(tensor_shape(op.operands[0]))])],
    # A pair's trailing axis is never named, and these name their axes: the real ones serve
    "stablehlo.slice": shape.TABLE["stablehlo.slice"],
    "stablehlo.concatenate": shape.TABLE["stablehlo.concatenate"],
    "stablehlo.reverse": window.TABLE["stablehlo.reverse"],
    "stablehlo.pad": _pad,
    "stablehlo.select": _select,
    "stablehlo.fft": _fft,
}
