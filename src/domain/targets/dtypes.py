"""What element types each runtime beyond JAX can hold, as tables of the artifact's dtypes.

A converter looks a function's dtypes up here before it writes anything: an
argument or result whose dtype a runtime cannot hold is refused with its
path. A PRNG key array travels as its key data (``uint32``, with the key's
trailing dimensions) where a runtime holds it as a weight; as a caller's
argument or result it is refused (export the function taking
``jax.random.key_data(key)`` instead). The safetensors table of bundles is
:data:`jaxport.domain.bundle.manifest.SAFETENSORS_DTYPES`.
"""

from __future__ import annotations

from types import MappingProxyType

from jaxport.domain.artifact.record import DType

#: The dtypes that TensorFlow's ``XlaCallModule`` carries, by TensorFlow's name for them.
#: Left out: ``int4``/``uint4`` (TensorFlow 2.21 has the dtypes, but XlaCallModule on CPU
#: returns wrong values for them), ``float4_e2m1fn`` (no CPU kernel takes it),
#: ``float8_e4m3``, ``float8_e3m4``, ``float8_e8m0fnu`` (TensorFlow has no such dtype),
#: ``float0`` and the PRNG key types (see the module's docstring).
TF_DTYPES = MappingProxyType({
    d: d.value for d in (
        DType.BOOL, DType.INT8, DType.INT16, DType.INT32, DType.INT64,
        DType.UINT8, DType.UINT16, DType.UINT32, DType.UINT64,
        DType.FLOAT16, DType.FLOAT32, DType.FLOAT64, DType.BFLOAT16,
        DType.COMPLEX64, DType.COMPLEX128,
        DType.FLOAT8_E4M3FN, DType.FLOAT8_E5M2, DType.FLOAT8_E4M3FNUZ,
        DType.FLOAT8_E5M2FNUZ, DType.FLOAT8_E4M3B11FNUZ)
})

#: A PRNG key dtype -> the dtype and trailing dimensions of its key data.
KEY_DATA = MappingProxyType({
    DType.KEY_FRY: ("uint32", (2,)),
    DType.KEY_RBG: ("uint32", (4,)),
    DType.KEY_UNSAFE_RBG: ("uint32", (4,)),
})

#: The dtypes that can have a gradient (a VJP's cotangent of any other dtype is ``float0``,
#: which XLA lowers to ``bool``).
DIFFERENTIABLE = frozenset({
    DType.FLOAT16, DType.FLOAT32, DType.FLOAT64, DType.BFLOAT16, DType.COMPLEX64, DType.COMPLEX128,
    DType.FLOAT8_E4M3FN, DType.FLOAT8_E5M2, DType.FLOAT8_E4M3FNUZ, DType.FLOAT8_E5M2FNUZ,
    DType.FLOAT8_E4M3B11FNUZ})


#: The dtypes that IREE 3.13 (``llvm-cpu``) holds, measured. Left out: ``int4``/``uint4`` (its
#: runtime maps no NumPy dtype to them), ``float8_e4m3b11fnuz``, ``float8_e4m3``,
#: ``float8_e3m4``, ``float4_e2m1fn`` (its HAL has no element type for them),
#: ``float8_e8m0fnu`` (it compiles, and computes wrong values), ``float0`` and the PRNG key
#: types (see the module's docstring).
IREE_DTYPES = frozenset({
    DType.BOOL, DType.INT8, DType.INT16, DType.INT32, DType.INT64,
    DType.UINT8, DType.UINT16, DType.UINT32, DType.UINT64,
    DType.FLOAT16, DType.FLOAT32, DType.FLOAT64, DType.BFLOAT16,
    DType.COMPLEX64, DType.COMPLEX128,
    DType.FLOAT8_E4M3FN, DType.FLOAT8_E5M2, DType.FLOAT8_E4M3FNUZ, DType.FLOAT8_E5M2FNUZ})


def why_not_iree(dtype: DType, *, weight: bool = False) -> str | None:
    """Why IREE cannot hold ``dtype`` as a caller's array (or, with ``weight``, as a weight), or None.

    >>> why_not_iree(DType.BFLOAT16) is None, why_not_iree(DType.KEY_FRY, weight=True) is None
    (True, True)
    >>> why_not_iree(DType.INT4)
    'the dtype int4, which IREE cannot hold'
    """
    if dtype in IREE_DTYPES or (weight and dtype in KEY_DATA):
        return None
    if dtype in KEY_DATA:
        return (f"a PRNG key array ({dtype.value}): export the function taking "
                f"jax.random.key_data(key), a {KEY_DATA[dtype][0]} array")
    return f"the dtype {dtype.value}, which IREE cannot hold"
