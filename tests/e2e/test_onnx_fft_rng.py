"""FFTs (ONNX ``DFT``, complex values as pairs), ``rng_bit_generator`` (bit for bit) and ``bitcast_convert``
between widths, against ``jax.jit``.

Each case is converted, run on ONNX Runtime and compared with JAX on the
CPU: FFT results within 1e-4 (relative and absolute, values of magnitude
about 1), random bits exactly; or it is refused with the typed error naming
the operation. Every case that converts also runs in onnxruntime-web.
"""

from __future__ import annotations

from collections.abc import Iterator
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
from jaxport.adapters.onnx.translate import translate  # noqa: E402
from tests.helpers.onnx_corpus import Case, check_case, expected, save, spec  # noqa: E402
from tests.helpers.web_batch import WebBatch, module_batch  # noqa: E402

b = jaxport.symbolic_shape("b")[0]
rng = np.random.default_rng(41)
F32, U32 = np.float32, np.uint32
A = lax.RandomAlgorithm
#: The FFTs' tolerance (relative and absolute): ONNX Runtime's DFT sums in another order than XLA's.
FFT_TOLERANCE = 1e-4


def normal(*shape: int) -> np.ndarray:
    return rng.normal(size=shape).astype(F32)


def to_onnx(case: Case) -> Any:
    """The case exported and translated, up to opset 26 (``BitCast``, which jax.random's floats need)."""
    record = jaxport.export(jax.jit(case.function))(*case.specs).record
    return translate(record, input_names=[f"in{i}" for i in range(len(record.in_avals))],
                     output_names=[f"out{j}" for j in range(len(record.out_avals))], max_opset=26)


def _filtered(x: jax.Array, n: int) -> jax.Array:
    spectrum = jnp.fft.rfft(x, n=n)
    return jnp.fft.irfft(spectrum * jnp.exp(-jnp.arange(spectrum.shape[-1]) / 3.0), n=n)


#: The operand of the edge cases: NaN, infinities, signed zeros.
EDGES = np.array([[np.nan, 1, 2, 3, 4, 5, 6, 7], [np.inf, 0, 0, 0, 0, 0, 0, 0], [1, 2, 3, 4, -np.inf, 0, 1, 2],
                  [-0.0, 0.0, -0.0, 0.0, 1, -1, 0, 0]], F32)
COMPLEX_CONSTANT = (rng.normal(size=40) + 1j * rng.normal(size=40)).astype(np.complex64)

FFTS: list[Case] = [
    Case("abs of rfft, irfft of a filtered spectrum: odd and even lengths, batched", lambda x, y: (
        jnp.abs(jnp.fft.rfft(x)), _filtered(x, 8), _filtered(y, 9), _filtered(y, 5), _filtered(y, 12),
        jnp.fft.irfft(jnp.fft.rfft(y), n=1)),
         [spec((3, 8)), spec((2, 9))], [[normal(3, 8), normal(2, 9)], [normal(3, 8) * 100, normal(2, 9)]],
         tolerance=FFT_TOLERANCE),
    Case("fft ifft fft2 fftn: real and imaginary parts, 1 to 3 axes", lambda x: (
        jnp.fft.fft(x).real, jnp.fft.ifft(x).imag, jnp.abs(jnp.fft.fft2(x)), jnp.fft.ifftn(x).real,
        jnp.fft.fftn(x, axes=(0, 2)).imag, jnp.fft.fft(x, axis=1).imag),
         [spec((3, 4, 6))], [[normal(3, 4, 6)]], tolerance=FFT_TOLERANCE),
    Case("rfftn and irfftn over 3 axes, rfft2 of odd sizes", lambda x, y: (
        jnp.fft.irfftn(jnp.fft.rfftn(x) * 2j, s=(3, 4, 5)), jnp.abs(jnp.fft.rfft2(y)) ** 2),
         [spec((2, 3, 4, 5)), spec((2, 5, 7))], [[normal(2, 3, 4, 5), normal(2, 5, 7)]], tolerance=FFT_TOLERANCE),
    Case("long signals: powers of two (radix 2) and other lengths (Bluestein's algorithm), 2-D", lambda x, y, z: (
        jnp.abs(jnp.fft.rfft(x)), jnp.fft.irfft(jnp.fft.rfft(x) / 3, n=1000), jnp.fft.fft(y).imag,
        jnp.fft.ifft(y).real, jnp.fft.irfft(jnp.fft.rfft(y)), jnp.abs(jnp.fft.fft2(z)), jnp.fft.irfft2(jnp.fft.rfft2(z))),
         [spec((2, 1000)), spec((4099,)), spec((65, 66))], [[normal(2, 1000), normal(4099), normal(65, 66)]],
         tolerance=FFT_TOLERANCE),
    Case("a symbolic batch, empty", lambda x: (jnp.abs(jnp.fft.rfft(x)), jnp.fft.irfft(jnp.fft.rfft(x), n=7),
                                               jnp.fft.ifft(jnp.fft.fft(x)).real),
         [spec((b, 7))], [[normal(3, 7)], [normal(1, 7)], [np.zeros((0, 7), F32)]], tolerance=FFT_TOLERANCE),
    Case("norms ortho and forward, division by the length, complex constants, conj, fftshift, sums", lambda x, y: (
        jnp.fft.irfft(jnp.fft.rfft(x, norm="ortho"), norm="ortho"), jnp.fft.fft(x, norm="forward").imag,
        (jnp.fft.fft(x) / x.shape[0]).real, jnp.fft.ifft(y * COMPLEX_CONSTANT).real,
        jnp.conj(jnp.fft.fft(x)).imag, jnp.abs(jnp.fft.fftshift(jnp.fft.fft(x))), jnp.abs(jnp.sum(jnp.fft.fft(y))),
        jnp.fft.irfft(jnp.fft.rfft(x, n=16) * jnp.fft.rfft(x[:5], n=16), n=16)),
         [spec((8,)), spec((40,))], [[normal(8), normal(40)]], tolerance=FFT_TOLERANCE),
    Case("exp, log, sin, powers and means of complex values (JAX writes them in real arithmetic)", lambda x: (
        jnp.exp(jnp.fft.fft(x) / 8).real, jnp.log(jnp.fft.fft(x)).real, jnp.sin(jnp.fft.ifft(x)).real,
        (jnp.fft.fft(x) ** 2).imag, jnp.mean(jnp.fft.fft(x), axis=0).real),
         [spec((3, 6))], [[normal(3, 6)]], tolerance=FFT_TOLERANCE),
    Case("NaN, infinities and signed zeros under abs, irfft's unread imaginary parts", lambda x, re, im: (
        jnp.abs(jnp.fft.rfft(x)), jnp.fft.irfft(lax.complex(re, im), n=6)),
         [spec((4, 8)), spec((4,)), spec((4,))], [[EDGES, normal(4), np.array([np.nan, 1, 2, np.inf], F32)]],
         tolerance=FFT_TOLERANCE),
    Case("complex division: Smith's algorithm, zero and infinite denominators and numerators", lambda a, c, d, e: (
        (lax.complex(a, c) / lax.complex(d, e)).real, (lax.complex(a, c) / lax.complex(d, e)).imag),
         [spec((9,))] * 4, [[np.array([1, np.inf, 1, 0, np.nan, 2, -np.inf, 3, 5], F32),
                             np.array([1, 0, 2, 0, 0, 1, np.inf, -1, 1], F32),
                             np.array([0, 1, np.inf, 0, 1, 1e-30, 1, -0.0, 2], F32),
                             np.array([0, 2, 0, 0, 0, 3, 0, 0, -np.inf], F32)]], tolerance=FFT_TOLERANCE),
    Case("a product of complex matrices", lambda x: jnp.abs(jnp.fft.fft(x) @ jnp.fft.fft(x)), [spec((3, 3))], [],
         refused="stablehlo.dot_general"),
    Case("tanh of complex values", lambda x: jnp.tanh(jnp.fft.fft(x)).real, [spec((4,))], [],
         refused="stablehlo.tanh"),
    Case("a cumulative sum of complex values", lambda x: jnp.cumsum(jnp.fft.fft(x)).real, [spec((4,))], [],
         refused="stablehlo.reduce_window"),
]


def _rbg(k: jax.Array) -> tuple[jax.Array, ...]:
    key = jax.random.wrap_key_data(k, impl="rbg")
    return (jax.random.uniform(key, (3, 4)), jax.random.normal(key, (5,)), jax.random.randint(key, (6,), 0, 10),
            jax.random.bits(jax.random.split(key)[1], (2,)))


def _bits(algorithm: Any, *shapes: tuple[int, ...], dtype: Any = jnp.uint32) -> Any:
    return lambda k: [lax.rng_bit_generator(k, s, dtype, algorithm=algorithm) for s in shapes]


KEYS = [[np.array([1, 2, 3, 4], U32)], [np.array([2**32 - 1] * 4, U32)], [np.array([0, 0, 2**32 - 2, 2**32 - 1], U32)]]
SHAPES = ((3, 5), (7,), (), (0, 3), (2, 1, 3), (5, 3, 1), (4, 6))

RNGS: list[Case] = [
    Case("PHILOX (the CPU's DEFAULT): uint32 of even, odd, scalar, empty shapes; counters that carry",
         _bits(A.RNG_PHILOX, *SHAPES), [spec((4,), U32)], KEYS),
    Case("DEFAULT is PHILOX: uint8 and uint16", lambda k: (*_bits(A.RNG_DEFAULT, (7,), (2, 3), dtype=jnp.uint8)(k),
                                                           *_bits(A.RNG_DEFAULT, (5,), dtype=jnp.uint16)(k)),
         [spec((4,), U32)], KEYS),
    Case("THREE_FRY: uint32 split along the first even or the largest dimension, scalar, empty",
         _bits(A.RNG_THREE_FRY, *SHAPES), [spec((4,), U32)], KEYS),
    Case("THREE_FRY: uint8 and uint16", lambda k: (*_bits(A.RNG_THREE_FRY, (7,), dtype=jnp.uint8)(k),
                                                   *_bits(A.RNG_THREE_FRY, (3, 3), dtype=jnp.uint16)(k)),
         [spec((4,), U32)], KEYS),
    Case("jax.random with the rbg key: uniform, normal, randint, split, bits", _rbg, [spec((4,), U32)], KEYS,
         tolerance=1e-6),
]


BITCASTS: list[Case] = [
    Case("bitcast_convert between widths: words least significant first, integers and floats", lambda i, w, h, x: (
        lax.bitcast_convert_type(i, jnp.int32), lax.bitcast_convert_type(w, jnp.uint8),
        lax.bitcast_convert_type(w, jnp.int16), lax.bitcast_convert_type(h, jnp.float32),
        lax.bitcast_convert_type(x, jnp.uint16), lax.bitcast_convert_type(lax.bitcast_convert_type(x, jnp.int8),
                                                                          jnp.float32)),
         [spec((b, 4), np.int8), spec((3,), np.int32), spec((2, 2), np.uint16), spec((4,))],
         [[rng.integers(-128, 128, (2, 4)).astype(np.int8), np.array([-1, 2**31 - 1, 0x01020304], np.int32),
           np.array([[0, 0x7FC0], [0x0001, 0x8000]], np.uint16), np.array([np.nan, -0.0, np.inf, 1.5], F32)],
          [np.zeros((0, 4), np.int8), np.array([0, -2**31, 5], np.int32), np.zeros((2, 2), np.uint16),
           np.array([-np.inf, 0.0, 3e-38, -2.0], F32)]]),
    Case("bitcast_convert of float16 between widths", lambda h: lax.bitcast_convert_type(h, jnp.uint32),
         [spec((3, 2), np.float16)], [], refused="stablehlo.bitcast_convert"),
]


#: The batch of this module's models, with JAX's outputs, to run in onnxruntime-web too (empty: no Node).
_WEB: list[WebBatch] = []


@pytest.fixture(scope="module", autouse=True)
def onnxruntime_web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every case that converts also runs in onnxruntime-web (WebAssembly, under Node) at the module's end."""
    yield from module_batch(_WEB, tmp_path_factory.mktemp("onnxruntime-web"))


@pytest.mark.parametrize("case", FFTS, ids=[c.name for c in FFTS])
def test_the_fft_matches_jax_or_is_refused_by_name(case: Case, tmp_path: Path) -> None:
    check_case(case, tmp_path, to_onnx, _WEB)


@pytest.mark.parametrize("case", RNGS, ids=[c.name for c in RNGS])
def test_the_random_bits_equal_jax_bit_for_bit(case: Case, tmp_path: Path) -> None:
    check_case(case, tmp_path, to_onnx, _WEB)


@pytest.mark.parametrize("case", BITCASTS, ids=[c.name for c in BITCASTS])
def test_bitcasts_between_widths_equal_jax(case: Case, tmp_path: Path) -> None:
    check_case(case, tmp_path, to_onnx, _WEB)


@pytest.mark.parametrize("algorithm", [A.RNG_PHILOX, A.RNG_THREE_FRY], ids=["PHILOX", "THREE_FRY"])
def test_uint64_random_bits_with_x64_keys_equal_jax(algorithm: Any, tmp_path: Path) -> None:
    with jax.enable_x64(True):
        case = Case("uint64", _bits(algorithm, (3, 3), (5,), (), dtype=jnp.uint64), [spec((2,), np.uint64)],
                    [[np.array([2**64 - 1, 2**64 - 3], np.uint64)], [np.array([7, 0], np.uint64)]])
        check_case(case, tmp_path, to_onnx, _WEB)


def test_an_fft_of_nan_is_nan_wherever_jax_s_is_and_equal_where_both_are_finite(tmp_path: Path) -> None:
    """ONNX Runtime's DFT multiplies every value by every twiddle factor, XLA's skips trivial ones: a NaN or an
    infinity spreads to more of the parts (``fft(x).imag`` where only ``x[0]`` is NaN), never fewer."""
    from jaxport.adapters.onnx.runtime import OnnxRuntimeModel

    case = Case("parts", lambda x: (jnp.fft.fft(x).real, jnp.fft.fft(x).imag, jnp.fft.rfft(x).imag),
                [spec((4, 8))], [[EDGES]])
    runtime = OnnxRuntimeModel(save(to_onnx(case), tmp_path, "parts"), threads=1)
    for g, w in zip(runtime.run([EDGES]), expected(case)[0]):
        assert np.isnan(g[np.isnan(w)]).all()
        both = np.isfinite(g) & np.isfinite(w)
        np.testing.assert_allclose(g[both], w[both], rtol=FFT_TOLERANCE, atol=FFT_TOLERANCE)


def test_random_bits_of_a_symbolic_shape_are_refused_naming_the_dynamic_generator(tmp_path: Path) -> None:
    from jaxport.errors import ConversionError

    def bits(k: jax.Array, x: jax.Array) -> jax.Array:
        result: jax.Array = jax.random.bits(jax.random.wrap_key_data(k, impl="rbg"), x.shape)
        return result

    exported = jaxport.export(jax.jit(bits))(spec((4,), U32), spec((b,)))
    with pytest.raises(ConversionError, match="custom call 'stablehlo.dynamic_rng_bit_generator'"):
        jaxport.to_onnx(exported, tmp_path / "bits")
    assert not (tmp_path / "bits").exists()
