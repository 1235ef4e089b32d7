"""The LiteRT target: what it refuses, its options, and what its directory records of itself.

LiteRT (TensorFlow Lite) runs ``.tflite`` models on phones and small
devices. A function converts from its CPU branch, for one device, without
ordered effects, erasing JAX's ``shape_assertion`` (the call front checks
every call) and running no other custom call; its dtypes are
:data:`.litert_plan.LITERT_DTYPES`. A symbolic function becomes one model
whose symbolic dimensions stay dynamic where LiteRT's converter keeps them
so, or one model per binding the user names (``--dims``: the plan's
``bindings_optional``). Each model holds its own copy of the weights, as constants
(:data:`details_of` records each file's constant bytes, which ``inspect``
shows). What the converter decides (unlegalized operations, Flex or custom
operators, builtins without a kernel) is :mod:`.litert_plan`'s.

bfloat16: LiteRT models take and return bfloat16 arrays, and its converter
legalizes few operations on them (an addition, for one, is refused by
name), so the policy is native: a function that widens its bfloat16 inputs
to float32 first converts; one that computes in bfloat16 is refused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from .artifact import DType
from .litert_plan import INT8_WEIGHTS, LITERT_DTYPES, check_quantize, tolerance
from .numerics import Tolerance
from .target_plan import BFloat16, DtypeTable, TargetPlan

#: The model file's suffix.
SUFFIX = ".tflite"


@dataclass(frozen=True, slots=True)
class LiteRtOptions:
    """How to convert for LiteRT.

    Attributes:
        quantize: None (float32 weights) or ``"int8-weights"`` (dynamic range:
            weights as int8 per channel, activations quantized on the fly;
            about 4x smaller, within :data:`.litert_plan.INT8_WEIGHTS_TOLERANCE`).
    """

    target: ClassVar[str] = "litert"
    quantize: str | None = None

    def __post_init__(self) -> None:
        check_quantize(self.quantize)


_NOTES = {
    DType.UINT64: "the dtype uint64, which LiteRT's converter cannot cast from or to",
    DType.COMPLEX128: "the dtype complex128, which LiteRT's converter cannot cast from or to",
    DType.INT4: "the dtype int4, for which LiteRT's interpreter takes no NumPy array",
    DType.UINT4: "the dtype uint4, for which LiteRT's interpreter takes no NumPy array",
}

def model_file(function: str, dims: Mapping[str, int]) -> str:
    """The file name of ``function``'s model for ``dims`` (none: a dynamic or static model).

    >>> model_file("predict", {"t": 16, "b": 1}), model_file("f", {})
    ('predict.b=1,t=16.tflite', 'f.tflite')
    """
    if not dims:
        return f"{function}{SUFFIX}"
    return f"{function}." + ",".join(f"{k}={v}" for k, v in sorted(dims.items())) + SUFFIX


def details_of(converter: str, quantize: str | None, models: Mapping[str, tuple[int, Sequence[str]]]) -> dict[str, Any]:
    """The ``target_details`` of a LiteRT directory.

    Args:
        converter: the converter's version (``"0.5.0"``).
        quantize: the options' quantization.
        models: per model file, its constant bytes (its copy of the weights) and
            the dimension variables it keeps dynamic.
    """
    return {"converter": f"litert-converter {converter}", "quantize": quantize or "none",
            "models": {file: {"constant_bytes": size, "dynamic": list(dynamic)}
                       for file, (size, dynamic) in sorted(models.items())}}


def numerics_tolerance(details: Mapping[str, Any]) -> Tolerance | None:
    """The tolerance of a LiteRT directory's golden examples: ``int8-weights``'s looser one, or None
    (float32 models: each dtype's default, which holds on LiteRT's kernels).

    >>> numerics_tolerance({"quantize": "int8-weights"}), numerics_tolerance({"quantize": "none"})
    (Tolerance(rtol=0.05, atol=1e-06), None)
    """
    return tolerance(INT8_WEIGHTS) if details.get("quantize") == INT8_WEIGHTS else None


def describe(details: Mapping[str, Any]) -> str:
    """What ``jaxport convert`` and ``inspect`` say of a LiteRT directory: the converter, the
    quantization, and each model's copy of the weights (its constant bytes) and dynamic dimensions.

    >>> describe(details_of("0.5.0", None, {"f.tflite": (2_500_000, ["b"]), "g.n=2.tflite": (10, [])}))
    'converted by litert-converter 0.5.0, weights float32, a copy in each model: f.tflite 2.4 MiB (dynamic b), g.n=2.tflite 0.0 KiB'
    """
    weights = "int8 (dynamic range)" if details.get("quantize") == INT8_WEIGHTS else "float32"
    models = details.get("models")
    parts = []
    for file, model in (models.items() if isinstance(models, Mapping) else ()):
        size = model.get("constant_bytes") if isinstance(model, Mapping) else None
        dynamic = model.get("dynamic") if isinstance(model, Mapping) else None
        shown = "?" if not isinstance(size, int) else f"{size / 2**20:.1f} MiB" if size >= 2**20 \
            else f"{size / 2**10:.1f} KiB"
        parts.append(f"{file} {shown}" + (f" (dynamic {', '.join(map(str, dynamic))})" if dynamic else ""))
    return (f"converted by {details.get('converter', 'litert-converter')}, weights {weights}, a copy in each "
            f"model: {', '.join(parts)}")


PLAN = TargetPlan(
    runtime="LiteRT",
    dtypes=DtypeTable(LITERT_DTYPES, keys_as_weights=True, bfloat16=BFloat16.NATIVE, notes=_NOTES),
    platforms=frozenset({"cpu"}),
    bindings_optional=True,
    describe=describe,
    numerics_tolerance=numerics_tolerance,
)
