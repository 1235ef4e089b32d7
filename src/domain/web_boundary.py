"""What a converted ONNX directory's functions must be to run in ONNX Runtime Web (``convert --web``).

ONNX Runtime Web has a tensor type for every dtype the ONNX target writes
but ``bfloat16``: a page could neither pass nor read one. ``--web`` refuses
a function with a ``bfloat16`` input or output before anything is written,
naming the argument or result; inside a function ``bfloat16`` is the ONNX
target's business (computed in float32).
"""

from __future__ import annotations

from .artifact import DType
from .converted import Signature
from .errors import ConversionError
from .runtime_calls import leaf_paths, result_paths

#: The name refusals give the target.
WEB_TARGET = "ONNX Runtime Web"
#: The ES module that ``--web`` adds to a directory (listed in its manifest).
WEB_MODULE = "jaxport.mjs"


def check_web_signature(signature: Signature) -> None:
    """Checks that a page can pass every input and read every output of ``signature``.

    Raises:
        ConversionError: an input or output is ``bfloat16``; the message names
            the function and the argument (``args[0]``) or result (``out['y']``).
    """
    arrays = [*zip(leaf_paths(signature.in_tree), signature.in_avals),
              *zip(result_paths(signature.out_tree), signature.out_avals)]
    for where, aval in arrays:
        if aval.dtype is DType.BFLOAT16:
            raise ConversionError(
                WEB_TARGET, signature.name,
                "it is bfloat16, for which onnxruntime-web has no tensor type: export the function with "
                "float32 there (cast to bfloat16 inside it), or convert without --web", where=where)
