"""What the targets share about dtypes: how a PRNG key travels, and which dtypes have a gradient.

Each target's own table of the artifact's dtypes that it holds lives in its
module (:data:`~jaxport.domain.targets.savedmodel.TF_DTYPES`,
:data:`~jaxport.domain.targets.iree.IREE_DTYPES`,
:data:`~jaxport.domain.targets.onnx.ONNX_DTYPES`,
:data:`~jaxport.domain.targets.litert.LITERT_DTYPES`); its plan refuses an
argument or result whose dtype it cannot hold, with its path, before
anything is written. A PRNG key array travels as its key data (``uint32``,
with the key's trailing dimensions, :data:`KEY_DATA`) where a runtime holds
it as a weight; as a caller's argument or result it is refused (export the
function taking ``jax.random.key_data(key)`` instead). The safetensors table
of bundles is :data:`jaxport.domain.bundle.manifest.SAFETENSORS_DTYPES`.
"""

from __future__ import annotations

from types import MappingProxyType

from jaxport.domain.artifact.record import DType

#: A PRNG key dtype -> the dtype and trailing dimensions of its key data.
KEY_DATA = MappingProxyType({
    DType.KEY_FRY: ("uint32", (2,)),
    DType.KEY_RBG: ("uint32", (4,)),
    DType.KEY_UNSAFE_RBG: ("uint32", (4,)),
})

#: The booleans and the integers of 8 to 64 bits, which every target but LiteRT holds.
BOOL_AND_INTEGERS = frozenset({
    DType.BOOL, DType.INT8, DType.INT16, DType.INT32, DType.INT64,
    DType.UINT8, DType.UINT16, DType.UINT32, DType.UINT64})

#: The dtypes that can have a gradient (a VJP's cotangent of any other dtype is ``float0``,
#: which XLA lowers to ``bool``).
DIFFERENTIABLE = frozenset({
    DType.FLOAT16, DType.FLOAT32, DType.FLOAT64, DType.BFLOAT16, DType.COMPLEX64, DType.COMPLEX128,
    DType.FLOAT8_E4M3FN, DType.FLOAT8_E5M2, DType.FLOAT8_E4M3FNUZ, DType.FLOAT8_E5M2FNUZ,
    DType.FLOAT8_E4M3B11FNUZ})
