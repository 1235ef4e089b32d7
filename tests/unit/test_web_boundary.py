"""``convert --web`` refuses a bfloat16 boundary, naming the function and where."""

from __future__ import annotations

import pytest

from jaxport.domain.artifact.record import AvalRecord, DType, TreeSpec
from jaxport.domain.calls.signature import Signature
from jaxport.domain.targets.onnx import check_web_signature
from jaxport.errors import ConversionError

LEAF = TreeSpec.leaf()
IN_TREE = TreeSpec.of_tuple(TreeSpec.of_tuple(LEAF), TreeSpec.of_dict({"scale": LEAF}))
OUT_TREE = TreeSpec.of_dict({"y": LEAF})


def _signature(x: str, scale: str, y: str) -> Signature:
    return Signature("f", IN_TREE, (AvalRecord(("b", "4"), DType(x)), AvalRecord((), DType(scale))),
                     OUT_TREE, (AvalRecord(("b",), DType(y)),))


def test_every_dtype_a_page_has_passes() -> None:
    for dtype in ("float32", "float16", "int32", "int64", "bool", "uint8", "float64"):
        check_web_signature(_signature(dtype, "float32", dtype))


@pytest.mark.parametrize(("signature", "where"), [
    (_signature("bfloat16", "float32", "float32"), "args[0]"),
    (_signature("float32", "bfloat16", "float32"), "kwargs['scale']"),
    (_signature("float32", "float32", "bfloat16"), "out['y']"),
])
def test_a_bfloat16_boundary_is_refused_naming_it(signature: Signature, where: str) -> None:
    with pytest.raises(ConversionError) as caught:
        check_web_signature(signature)
    assert str(caught.value) == (
        f"Cannot convert the function 'f' to ONNX Runtime Web ({where}): it is bfloat16, for which onnxruntime-web "
        "has no tensor type: export the function with float32 there (cast to bfloat16 inside it), or convert "
        "without --web")
    assert (caught.value.function, caught.value.where) == ("f", where)
