"""LiteRT's converter: a StableHLO portable artifact to ``.tflite`` bytes, without TensorFlow.

The only module that imports ``litert_converter`` (the ``litert-converter``
package of the ``jaxport[litert]`` extra; wheels for Linux x86_64 and macOS
arm64), and, for ``int8-weights``, ``ai_edge_quantizer``. The artifact is
read by the converter's own StableHLO (which reads versions up to 1.20),
its ``main`` gets the signature named after the function with the caller's
wire names, and the converter's default pipeline (``run_convert_to_tfl_passes``,
as litert-torch runs it) legalizes it to LiteRT's builtin operators before
the flatbuffer is written. An operation of another dialect left after the
passes is reported by name (:func:`jaxport.domain.targets.litert.check_unlegalized`),
with the converter's first diagnostic.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np

from jaxport.domain.errors import ConversionError, MissingExtraError
from jaxport.domain.converted.quantization import INT8, INT8_DYNAMIC, INT8_WEIGHTS
from jaxport.domain.targets.litert import RUNTIME_NAME, check_unlegalized

try:
    import litert_converter
    from litert_converter import converter_api_ext
    from litert_converter.mlir import ir, passmanager
    from litert_converter.mlir.dialects import stablehlo
except ImportError as exc:  # the extra is not installed, or not on this platform
    raise MissingExtraError("LiteRT's converter (litert-converter, for Linux x86_64 and macOS arm64)",
                            "litert", exc) from exc

_FAILED = re.compile(r"failed to legalize operation '([\w.]+)'")
_OP_ERROR = re.compile(r"error: '([\w.]+)' op ")
#: The dialects of a fully legalized module (LiteRT's operators, and the module's frame).
_LEGAL_DIALECTS = ("tfl.", "func.", "builtin.", "quant.")


def converter_version() -> str:
    """The converter's version (``"0.5.0"``)."""
    return str(litert_converter.__version__)


def to_tflite(function: str, portable: bytes, input_names: Sequence[str], output_names: Sequence[str],
              *, symbolic: Sequence[str] = ()) -> bytes:
    """The ``.tflite`` flatbuffer of the portable artifact's ``main``, one signature named ``function``.

    Args:
        function: the function's name: the signature's key.
        portable: a StableHLO portable artifact whose ``main`` takes the caller's flat inputs.
        input_names: the signature's name of each of ``main``'s inputs.
        output_names: the signature's name of each of its results.
        symbolic: the dimension variables left dynamic in ``main`` (for the advice of a refusal).

    Raises:
        ConversionError: the converter left an operation unlegalized or refused the module
            (the message names the operation and gives its first diagnostic).
    """
    context = ir.Context()
    converter_api_ext.prepare_mlir_context(context)
    diagnostics: list[str] = []

    def keep(diagnostic: ir.Diagnostic) -> bool:
        diagnostics.append(f"{diagnostic.message} at {diagnostic.location}")
        return True

    context.attach_diagnostic_handler(keep)
    with context:
        module = stablehlo.deserialize_portable_artifact(context, portable)
        converter_api_ext.set_signature(module.operation, function, list(input_names), list(output_names))
        try:
            converter_api_ext.run_convert_to_tfl_passes(module, passmanager.PassManager(),
                                                        converter_api_ext.ConvertToTFLConfig())
        except ValueError as exc:
            named = _illegal_operation(diagnostics) or _illegal_operation([str(exc)])
            check_unlegalized(function, [named] if named else ["(unnamed)"], symbolic=symbolic,
                              detail=_first(diagnostics, str(exc)))
        try:
            return bytes(converter_api_ext.export_flatbuffer_to_bytes(module.operation))
        except ValueError as exc:
            left = _left_operations(module)
            check_unlegalized(function, left, symbolic=symbolic, detail=_first(diagnostics, ""))
            nested = _operations_with_regions(module)
            what = f" (it holds {', '.join(repr(n) for n in nested)}, whose regions it cannot write)" if nested else ""
            raise ConversionError(RUNTIME_NAME, function, f"LiteRT's flatbuffer exporter refused the converted "
                                                          f"module{what}: {_first(diagnostics, str(exc))}") from None


def _left_operations(module: ir.Module) -> list[str]:
    """The names of the outermost operations outside LiteRT's dialects, sorted."""
    found: set[str] = set()

    def visit(op: ir.Operation) -> ir.WalkResult:
        if not op.name.startswith(_LEGAL_DIALECTS) and op.name != "arith.constant":
            found.add(op.name)
            return ir.WalkResult.SKIP
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return sorted(_public_name(n) for n in found)


def _operations_with_regions(module: ir.Module) -> list[str]:
    """The names of LiteRT operations with regions (control flow: ``tfl.while``), sorted."""
    found: set[str] = set()

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name.startswith("tfl.") and len(op.regions):
            found.add(op.name)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return sorted(found)


def _public_name(op: str) -> str:
    """StableHLO's name of a versioned op (``vhlo.dynamic_gather_v1`` is ``stablehlo.dynamic_gather``)."""
    if op.startswith("vhlo."):
        base = op.removeprefix("vhlo.")
        head, _, version = base.rpartition("_v")
        return f"stablehlo.{head if version.isdigit() else base}"
    return op


def _illegal_operation(texts: Sequence[str]) -> str | None:
    """The operation an error names: ``failed to legalize operation 'X'``, or ``'X' op ...``."""
    for text in texts:
        found = _FAILED.search(text) or _OP_ERROR.search(text)
        if found:
            return _public_name(found[1])
    return None


def _first(diagnostics: Sequence[str], fallback: str) -> str:
    """The first error line of the diagnostics (or of ``fallback``), with its location."""
    text = diagnostics[0] if diagnostics else fallback
    lines = [line.strip() for line in text.splitlines() if "error:" in line]
    text = lines[0] if lines else " ".join(text.split())
    return text if len(text) <= 600 else f"{text[:450]} ... {text[-120:]}"


#: The operators that ``int8`` quantizes (weights and activations): matrix products by a weight and convolutions.
_STATIC_OPERATORS = ("FULLY_CONNECTED", "CONV_2D", "DEPTHWISE_CONV_2D")


def quantize(function: str, model: bytes, mode: str,
             calibration: Sequence[Mapping[str, np.ndarray]] = ()) -> bytes:
    """The model quantized by ai-edge-quantizer: ``int8-weights`` (weight-only), ``int8-dynamic`` (dynamic
    range) or ``int8`` (fully connected
    layers and convolutions in int8, weights and activations, calibrated on ``calibration``: per example, the
    signature's inputs by name; the rest float32). (``float16`` is :mod:`jaxport.adapters.litert.narrow_constants`'s.)

    Raises:
        MissingExtraError: ai-edge-quantizer is not installed.
        ConversionError: the quantizer refused the model.
    """
    try:
        from ai_edge_quantizer import quantizer, recipe, recipe_manager, qtyping  # 181 ms: int8 only
    except ImportError as exc:
        raise MissingExtraError("ai-edge-quantizer", "litert", exc) from exc
    try:
        if mode == INT8_WEIGHTS:  # at round-to-nearest's error: XNNPACK computes in float32
            chosen = recipe.weight_only_wi8_afp32()
        elif mode == INT8_DYNAMIC:
            chosen = recipe.dynamic_wi8_afp32()
        else:
            manager = recipe_manager.RecipeManager()
            for name in _STATIC_OPERATORS:
                manager.add_static_config(regex=".*", operation_name=getattr(qtyping.TFLOperationName, name),
                                          activation_num_bits=8, weight_num_bits=8,
                                          algorithm_key=recipe.AlgorithmName.MIN_MAX_UNIFORM_QUANT)
            chosen = manager.get_quantization_recipe()
        tool = quantizer.Quantizer(bytearray(model), chosen)
        calibrated = tool.calibrate({function: [dict(e) for e in calibration]}) if mode == INT8 else None
        result = tool.quantize(calibrated, enable_progress_bar=False, enable_progress_report=False)
    except Exception as exc:  # the quantizer raises bare Exceptions, with text
        raise ConversionError(RUNTIME_NAME, function, f"ai-edge-quantizer refused the model: {exc}") from exc
    if result.quantized_model is None:
        raise ConversionError(RUNTIME_NAME, function, "ai-edge-quantizer returned no model")
    return bytes(result.quantized_model)
