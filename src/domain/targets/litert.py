"""The LiteRT target: what it refuses, its options, and what its directory records of itself.

LiteRT (TensorFlow Lite) runs ``.tflite`` models on phones and small
devices. A function converts from its CPU branch, for one device, without
ordered effects, erasing JAX's ``shape_assertion`` (the call front checks
every call) and running no other custom call; its dtypes are
:data:`LITERT_DTYPES`. A symbolic function becomes one model
whose symbolic dimensions stay dynamic where LiteRT's converter keeps them
so, or one model per binding the user names (``--dims``: the plan's
``bindings_optional``). Each model holds its own copy of the weights, as constants
(:data:`details_of` records each file's constant bytes, which ``inspect``
shows). What the converter decides (unlegalized operations, Flex or custom
operators, builtins without a kernel) is refused here too, by name.

bfloat16: LiteRT models take and return bfloat16 arrays, and its converter
legalizes few operations on them (an addition, for one, is refused by
name), so the policy is native: a function that widens its bfloat16 inputs
to float32 first converts; one that computes in bfloat16 is refused.

This module knows no MLIR and no flatbuffer: the adapters report operation
and operator names, this module says which it refuses and why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from jaxport.domain.artifact.record import DType
from jaxport.domain.converted.numerics import Tolerance, DEFAULT_TOLERANCES
from jaxport.domain.converted.static_shapes import dims_advice
from jaxport.domain.converted.quantization import (
    FLOAT16, INT8, INT8_DYNAMIC, INT8_WEIGHTS, MODES, check_mode, parse_tolerance)
from jaxport.domain.errors import ConversionError, UsageError
from .plan import BFloat16, DtypeTable, TargetPlan
from .unfolded import ELEMENTWISE_KERNELS


#: The runtime, as messages name it.
RUNTIME_NAME = "LiteRT"
#: The custom calls the conversion erases.
ERASED_CUSTOM_CALLS = frozenset({"shape_assertion"})
#: The quantizations a conversion offers (:mod:`jaxport.domain.converted.quantization`): weights as int8,
#: activations float32 (ai-edge-quantizer's weight-only recipe) or quantized per call (its dynamic-range
#: recipe); every float32 constant as float16; weights and activations of fully connected layers and
#: convolutions as int8, calibrated (its static recipe).
QUANTIZATIONS = (INT8_WEIGHTS, INT8_DYNAMIC, FLOAT16, INT8)

#: The dtypes that cross a LiteRT model's boundary (litert-converter 0.5 and ai-edge-litert 2.3),
#: measured by converting and running a conversion from and to float32 for each. Left out:
#: ``uint64`` and ``complex128`` (the converter cannot legalize a cast from or to them),
#: the ``float8`` dtypes (the flatbuffer exporter refuses them), ``int4``/``uint4`` (the
#: interpreter takes no NumPy array for them), ``float0`` and PRNG key arrays (export the
#: function taking ``jax.random.key_data(key)``). An operation on a dtype in the table may still
#: lack a LiteRT operator (``int8`` addition, for one): the converter names it.
LITERT_DTYPES = frozenset({
    DType.BOOL, DType.INT8, DType.INT16, DType.INT32, DType.INT64,
    DType.UINT8, DType.UINT16, DType.UINT32,
    DType.FLOAT16, DType.BFLOAT16, DType.FLOAT32, DType.FLOAT64, DType.COMPLEX64})

#: Why LiteRT has no float64 form of an unfolded operation (:mod:`jaxport.domain.targets.unfolded`; float16 and
#: bfloat16 are computed in float32): measured with litert-converter 0.5.
NO_FLOAT64 = "its converter legalizes no float64 arithmetic (tfl.mul, tfl.add, tfl.exp and tfl.log take none)"


def unfolded_reason(operation: str, dtype: str) -> str | None:
    """Why LiteRT has no ``dtype`` form of the unfolded ``operation``, else None.

    >>> unfolded_reason("stablehlo.fma", "float16") is None
    True
    """
    del operation
    return NO_FLOAT64 if dtype == "float64" else None

#: Operators of the converted model that LiteRT's interpreter cannot run without TensorFlow.
FLEX_PREFIX = "Flex"

#: The tolerance of a float32 conversion against JAX, normwise as :mod:`jaxport.domain.converted.numerics` compares
#: (``err <= atol + rtol * ref``, ``ref`` the output's largest magnitude): float32's default.
#: LiteRT's kernels (XNNPACK's, picked by the CPU's instruction set, or its builtin ones) sum in
#: other orders than XLA's and fuse GELU and layer norms: measured within 3e-7 of the output's
#: magnitude, with XNNPACK and without.
FLOAT32_TOLERANCE = DEFAULT_TOLERANCES["float32"]
#: The tolerance of an ``int8-weights`` conversion, normwise: 5% of the output's largest
#: magnitude. Each weight is rounded to one of 255 levels per output channel; measured at 0.5-3%
#: through two to six layers, round-to-nearest's error (``int8-dynamic`` rounds each activation
#: entering a fully connected layer too: 1.0-1.5x that).
INT8_WEIGHTS_TOLERANCE = MODES[INT8_WEIGHTS]


def check_unlegalized(name: str, operations: Sequence[str], *, symbolic: Sequence[str],
                      detail: str = "") -> None:
    """Refuses a module in which the converter left operations of other dialects than LiteRT's.

    Args:
        name: the function's name.
        operations: the names of the operations left (``stablehlo.dynamic_gather``), sorted.
        symbolic: the function's dimension variables when it was converted with
            dynamic shapes (empty for static shapes), for the advice to give ``dims``.
        detail: the converter's first diagnostic, if any.

    Raises:
        ConversionError: when ``operations`` is not empty.
    """
    if not operations:
        return
    listed = ", ".join(f"'{op}'" for op in operations)
    said = f" ({detail})" if detail else ""
    advice = (f"; with symbolic shapes (dimension variables {', '.join(symbolic)}) LiteRT's converter may "
              f"legalize it for static ones: give the sizes to convert for, as {dims_advice(name, symbolic)}"
              if symbolic else "")
    raise ConversionError(RUNTIME_NAME, name, f"LiteRT's converter cannot legalize the operation(s) {listed}"
                                              f"{said}{advice}.")


def check_operators(name: str, operators: Sequence[tuple[str, str]]) -> None:
    """Refuses a converted model with operators that LiteRT runs only with TensorFlow or a custom kernel.

    Args:
        name: the function's name.
        operators: per operator code of the model, its builtin name and (for ``CUSTOM``) its custom code.

    Raises:
        ConversionError: naming the first Flex (Select TF) or custom operator.
    """
    for builtin, custom in operators:
        if builtin != "CUSTOM":
            continue
        if custom.startswith(FLEX_PREFIX):
            raise ConversionError(RUNTIME_NAME, name, f"the converted model needs the TensorFlow operator "
                                                      f"'{custom.removeprefix(FLEX_PREFIX)}' (a Flex op), which "
                                                      "LiteRT's interpreter (ai-edge-litert) cannot run")
        raise ConversionError(RUNTIME_NAME, name, f"the converted model calls the custom operator "
                                                  f"'{custom}', which LiteRT's builtin interpreter does not have")


def check_names(name: str, kind: str, names: Sequence[str], count: int) -> None:
    """Checks the wire names of a model's inputs or outputs: one per flat value, distinct.

    Raises:
        UsageError: a wrong count or a repeated name.
    """
    if len(names) != count:
        raise UsageError(f"'{name}' has {count} flat {kind}s, and {len(names)} {kind} names were given")
    if len(set(names)) != len(names):
        repeated = sorted({n for n in names if list(names).count(n) > 1})
        raise UsageError(f"'{name}' was given the {kind} names {repeated} more than once")


#: The model files' suffix (their names: :func:`~jaxport.domain.converted.static_shapes.variant_file`).
SUFFIX = ".tflite"
#: The one model file of a directory converted from a generative bundle: every variant of every
#: function a signature of it, the weights stored once (LiteRT-LM's convention: ``prefill`` and
#: ``decode`` signatures sharing one copy of the weights).
SHARED_FILE = "model.tflite"
#: How much larger than one copy of the weights :data:`SHARED_FILE` may be before its record says why.
SHARED_SIZE_LIMIT = 1.1


def signature_key(function: str, variant_stem: str, nr_variants: int) -> str:
    """The signature of a variant in :data:`SHARED_FILE`: the function's name when it has one variant,
    else the variant's file stem (its binding; function names hold no ``=``, so keys never meet).

    >>> signature_key("decode", "decode.b=1", 1), signature_key("prefill", "prefill.b=1,s=4", 2)
    ('decode', 'prefill.b=1,s=4')
    """
    return function if nr_variants == 1 else variant_stem


def shared_record(file_bytes: int, weights_bytes: int, constant_bytes: int, signatures: Mapping[str, str]
                  ) -> dict[str, Any]:
    """What a directory records of its :data:`SHARED_FILE`: its signatures (key: function), its size
    against one copy of the weights, and, past :data:`SHARED_SIZE_LIMIT` of them, why.

    >>> shared_record(1000, 100, 110, {"decode": "decode"})["why"]
    'the graphs of its 1 signature(s) (operators, tensors, shapes) take 890 bytes beside 100 bytes of weights'
    >>> "why" in shared_record(105, 100, 100, {"decode": "decode"})
    False
    """
    record: dict[str, Any] = {"signatures": dict(sorted(signatures.items())), "file_bytes": file_bytes,
                              "weights_bytes": weights_bytes}
    if file_bytes > SHARED_SIZE_LIMIT * weights_bytes:
        if constant_bytes > SHARED_SIZE_LIMIT * weights_bytes:
            record["why"] = (f"its constants take {constant_bytes} bytes against {weights_bytes} bytes of weights: "
                             "the converter stored some constants differently in different signatures, or made "
                             "constants of its own")
        else:
            record["why"] = (f"the graphs of its {len(signatures)} signature(s) (operators, tensors, shapes) take "
                             f"{file_bytes - constant_bytes} bytes beside {weights_bytes} bytes of weights")
    return record


def shared_signatures(details: Mapping[str, Any]) -> dict[str, str] | None:
    """The signatures (key: function) of a directory's :data:`SHARED_FILE`; None: one file per variant."""
    models = details.get("models")
    shared = models.get(SHARED_FILE) if isinstance(models, Mapping) else None
    signatures = shared.get("signatures") if isinstance(shared, Mapping) else None
    return {str(k): str(v) for k, v in signatures.items()} if isinstance(signatures, Mapping) else None


@dataclass(frozen=True, slots=True)
class LiteRtOptions:
    """How to convert for LiteRT.

    Attributes:
        quantize: None (float32 weights), ``"int8-weights"`` (weights as int8 per
            channel, activations float32; about 4x smaller, within
            :data:`INT8_WEIGHTS_TOLERANCE`), ``"int8-dynamic"`` (dynamic range: those,
            and the activations quantized on the fly), ``"float16"``
            (every float32 constant stored as float16) or ``"int8"`` (static,
            calibrated); the tolerances: :mod:`jaxport.domain.converted.quantization`.
        tolerance: the golden examples' tolerance of a quantized conversion in place of the mode's
            (:func:`~jaxport.domain.converted.quantization.parse_tolerance`: also ``"RTOL[,ATOL]"``).

    Raises:
        UsageError: a quantization LiteRT lacks, a tolerance that is not one, or one without a quantization.
    """

    target: ClassVar[str] = "litert"
    quantize: str | None = None
    tolerance: Tolerance | None = None

    def __post_init__(self) -> None:
        check_mode(RUNTIME_NAME, self.quantize, QUANTIZATIONS)
        object.__setattr__(self, "tolerance", parse_tolerance(self.tolerance, self.quantize))


_NOTES = {**{d: f"the dtype {d.value}, which LiteRT's converter cannot cast from or to"
               for d in (DType.UINT64, DType.COMPLEX128)},
          **{d: f"the dtype {d.value}, for which LiteRT's interpreter takes no NumPy array"
             for d in (DType.INT4, DType.UINT4)}}


def details_of(converter: str, quantize: str | None, models: Mapping[str, tuple[int, Sequence[str]]],
               shared: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``target_details`` of a LiteRT directory.

    Args:
        converter: the converter's version (``"0.5.0"``).
        quantize: the options' quantization.
        models: per model file, its constant bytes (its copy of the weights) and
            the dimension variables it keeps dynamic.
        shared: for :data:`SHARED_FILE`, :func:`shared_record`'s entries (None: none).
    """
    return {"converter": f"litert-converter {converter}", "quantize": quantize or "none",
            "models": {file: {"constant_bytes": size, "dynamic": list(dynamic),
                              **(dict(shared or {}) if file == SHARED_FILE else {})}
                       for file, (size, dynamic) in sorted(models.items())}}


def numerics_tolerance(details: Mapping[str, Any]) -> Tolerance | None:
    """The tolerance of a LiteRT directory's golden examples: a quantization's looser one, or None
    (float32 models: each dtype's default, which holds on LiteRT's kernels). (A manifest's recorded
    ``quantization`` comes first; this reads directories written before it.)

    >>> numerics_tolerance({"quantize": "int8-weights"}), numerics_tolerance({"quantize": "none"})
    (Tolerance(rtol=0.05, atol=1e-06), None)
    """
    mode = details.get("quantize")
    return MODES[mode] if isinstance(mode, str) and mode in QUANTIZATIONS else None


_WEIGHTS = {INT8_WEIGHTS: "int8 (weights only)", INT8_DYNAMIC: "int8 (dynamic range)", FLOAT16: "float16", INT8: "int8 (static, calibrated)"}


def describe(details: Mapping[str, Any]) -> str:
    """What ``jaxport convert`` and ``inspect`` say of a LiteRT directory: the converter, the
    quantization, and each model's copy of the weights (its constant bytes) and dynamic dimensions;
    of a :data:`SHARED_FILE`, its signatures and its size against the weights.

    >>> describe(details_of("0.5.0", None, {"f.tflite": (2_500_000, ["b"]), "g.n=2.tflite": (10, [])}))
    'converted by litert-converter 0.5.0, weights float32, a copy in each model: f.tflite 2.4 MiB (dynamic b), g.n=2.tflite 0.0 KiB'
    >>> describe(details_of("0.5.0", None, {SHARED_FILE: (2_500_000, [])},
    ...                     shared_record(2_600_000, 2_500_000, 2_500_000, {"prefill": "prefill", "decode": "decode"})))
    'converted by litert-converter 0.5.0, weights float32, one copy shared by the 2 signatures of model.tflite 2.4 MiB (the file 1.04x the weights)'
    """
    weights = _WEIGHTS.get(str(details.get("quantize")), "float32")
    models = details.get("models")
    parts = []
    for file, model in (models.items() if isinstance(models, Mapping) else ()):
        size = model.get("constant_bytes") if isinstance(model, Mapping) else None
        dynamic = model.get("dynamic") if isinstance(model, Mapping) else None
        shown = "?" if not isinstance(size, int) else f"{size / 2**20:.1f} MiB" if size >= 2**20 \
            else f"{size / 2**10:.1f} KiB"
        parts.append(f"{file} {shown}" + (f" (dynamic {', '.join(map(str, dynamic))})" if dynamic else ""))
    head = f"converted by {details.get('converter', 'litert-converter')}, weights {weights}"
    signatures = shared_signatures(details)
    if signatures is None or not isinstance(models, Mapping):
        return f"{head}, a copy in each model: {', '.join(parts)}"
    shared = models[SHARED_FILE]
    file_bytes, weights_bytes = shared.get("file_bytes"), shared.get("weights_bytes")
    ratio = f"the file {file_bytes / weights_bytes:.2f}x the weights" \
        if isinstance(file_bytes, int) and isinstance(weights_bytes, int) and weights_bytes > 0 else ""
    why = f": {shared['why']}" if ratio and "why" in shared else ""
    tail = f" ({ratio}{why})" if ratio else ""
    return f"{head}, one copy shared by the {len(signatures)} signatures of {', '.join(parts)}{tail}"

PLAN = TargetPlan(
    runtime="LiteRT",
    dtypes=DtypeTable(LITERT_DTYPES, keys_as_weights=True, bfloat16=BFloat16.NATIVE, notes=_NOTES),
    platforms=frozenset({"cpu"}),
    custom_calls=ERASED_CUSTOM_CALLS | frozenset(ELEMENTWISE_KERNELS),  # the kernels unfolded
    bindings_optional=True,
    describe=describe,
    numerics_tolerance=numerics_tolerance,
    unfolded_reason=unfolded_reason,
)
