"""Each target's public spellings, listed beside the registry: ``jaxport.to_NAME`` and ``convert --to NAME``'s flags.

The registry (:data:`jaxport.domain.targets.registry.TARGETS`, also
``jaxport.TARGETS``) names each target's plan, options class, converter and
runtime; ``jaxport convert``'s ``--to`` accepts exactly its names. What the
registry cannot hold is here, once per target, in the registry's order:

* :data:`COMMAND_LINE`: what ``jaxport convert --help`` says of the target
  and the flags that set fields of its options class (``--target-cpu``).
  It is plain data, so that ``jaxport --help`` builds the parser without
  importing the registry (whose plans import the symbolic-shape machinery);
* ``to_NAME``: ``convert(source, path, to="NAME", options=NAMEOptions(...))``
  with the options' fields as keywords. Each is written out, not generated
  from the options class: mypy --strict and readers see its parameters,
  their types and defaults, and its docstring says what the target writes.

``tests/unit/test_target_registry.py`` checks this module, the facade and the
guide's index against the registry.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jaxport.application.bundles.api import Bundle
    from jaxport.adapters.jax.exported.exported import Exported
    from jaxport.domain.converted.manifest import ConvertedManifest
    from jaxport.application.conversion.pipeline import Dims
    from jaxport.application.conversion.quantized import Calibration
    from jaxport.domain.converted.numerics import Tolerance


@dataclass(frozen=True, slots=True)
class Flag:
    """One flag of ``jaxport convert`` that sets the field ``field`` of a target's options class.

    Attributes:
        field: the options field it sets.
        flag: its spelling (``"--target-cpu"``).
        help: what it does (``--help`` prefixes the target's name).
        metavar: the value's name in ``--help``.
        type: what reads the value (None: the text itself).
        switch: a flag without a value (True when given, else unset).
        repeat: given any number of times; the field gets the values as a tuple.
    """

    field: str
    flag: str
    help: str
    metavar: str | None = None
    type: Callable[[str], Any] | None = None
    switch: bool = False
    repeat: bool = False

    @property
    def dest(self) -> str:
        """Its attribute of the parsed arguments (argparse's own name for it)."""
        return self.flag.removeprefix("--").replace("-", "_")


@dataclass(frozen=True, slots=True)
class TargetCommandLine:
    """What ``jaxport convert`` says of one target and the flags of its options.

    Attributes:
        summary: the sentence of ``convert --help`` after the target's name,
            ending with the extra to install.
        flags: the flags that set fields of its options class (any other
            field is set with ``--option FIELD=VALUE``).
    """

    summary: str
    flags: tuple[Flag, ...] = ()


#: The flag of every target that quantizes.
_TOLERANCE = Flag("tolerance", "--tolerance", "the golden examples' tolerance of a quantized conversion in place of "
                  "the mode's: RTOL or RTOL,ATOL (err <= ATOL + RTOL * the output's largest magnitude; recorded "
                  "in the manifest, which check --numerics uses)", metavar="RTOL[,ATOL]")

#: Each target's part of ``jaxport convert``, by the registry's name, in the registry's order.
COMMAND_LINE: Mapping[str, TargetCommandLine] = MappingProxyType({
    "savedmodel": TargetCommandLine(
        "writes a TensorFlow SavedModel for TensorFlow Serving, without importing JAX: one signature per "
        "function, the bundle's weights as variables (needs pip install 'jaxport[tf]')",
        (Flag("default", "--default", "the function that serving_default calls (default: the only one)",
              metavar="NAME"),
         Flag("allowed_custom_calls", "--allow-custom-call", "carry this custom-call target although "
              "TensorFlow's XLA lacks a handler for it (repeat)", metavar="TARGET", repeat=True))),
    "iree": TargetCommandLine(
        "compiles each function ahead of time with IREE: one module per binding of its dimension variables "
        "(--dims), the weights read from the bundle's safetensors file as IREE parameters (needs pip install "
        "'jaxport[iree]')",
        (Flag("target_cpu", "--target-cpu", "the CPU to compile for: host (default), generic, or an LLVM CPU "
              "name such as x86-64-v3 or cortex-a72", metavar="CPU"),
         Flag("target_triple", "--target-triple", "the machine to compile for, e.g. aarch64-linux-gnu "
              "(default: this one)", metavar="TRIPLE"))),
    "onnx": TargetCommandLine(
        "translates each function into one ONNX model of any size for ONNX Runtime (--opset), the weights "
        "read from the bundle's safetensors file as ONNX external data (needs pip install 'jaxport[onnx]')",
        (Flag("opset", "--opset", "the ai.onnx opset to write (21 to 26; by default 21, or 26 for a model that needs BitCast)", metavar="N", type=int),
         Flag("web", "--web", "also write jaxport.mjs, which loads the directory in a web page with ONNX "
              "Runtime Web (refuses bfloat16 inputs and outputs)", switch=True),
         Flag("quantize", "--quantize", "int8-weights (the weights of matrix products and embeddings as int8 "
              "per channel, about 4x smaller), int8-dynamic (those, and the products' activations quantized "
              "per call: faster, less accurate), int4-weights (int4 in blocks of 32, about 6x smaller) or int8 "
              "(the products' activations too, calibrated: --calibration)",
              metavar="MODE"),
         _TOLERANCE,
         Flag("keep_float", "--keep-float", "keep the weights whose path in the bundle matches PATTERN (a glob: "
              "'blocks/*/fc') in float (repeat)", metavar="PATTERN", repeat=True),
         Flag("auto", "--auto", "keep in float, greedily from the largest measured contribution, the fewest "
              "weights that let the golden examples pass the tolerance ('jaxport inspect DIR' lists them)",
              switch=True))),
    "litert": TargetCommandLine(
        "writes LiteRT (.tflite) models for phones and small devices, the weights as constants of each, a "
        "symbolic batch kept dynamic where LiteRT can, else one model per --dims binding (needs pip install "
        "'jaxport[litert]')",
        (Flag("quantize", "--quantize", "int8-weights (weights as int8 per channel, activations float32; about "
              "4x smaller), int8-dynamic (those, and the activations quantized per call), float16 (every float32 constant as float16, 2x smaller) or int8 (weights and "
              "activations, calibrated: --calibration)", metavar="MODE"),
         _TOLERANCE)),
})


def to_savedmodel(source: Exported | Bundle | str | os.PathLike[str], path: str | os.PathLike[str], *,
                  default: str | None = None, allowed_custom_calls: Iterable[str] = (),
                  overwrite: bool = False) -> ConvertedManifest:
    """``convert(source, path, to="savedmodel", ...)``: a TensorFlow SavedModel for TensorFlow Serving.

    One signature per function, named after it, with the caller's arguments
    as inputs named by :mod:`jaxport.domain.calls.wire_names` (``arg0``,
    ``arg1/dense/w``, keywords by name); ``serving_default`` calls the
    function ``default`` names, or the only one. A bundle's weights become
    one ``tf.Variable`` each. Where the artifacts carry VJPs,
    ``tf.GradientTape`` over the loaded object's functions gives JAX's
    gradients. ``assets.extra/jaxport/`` keeps the manifest.

    Raises:
        As :func:`convert`; ``MissingExtraError`` without TensorFlow (``jaxport[tf]``).
    """
    from jaxport.domain.targets.savedmodel import SavedModelOptions  # not for --help (test_purity.py; figures: cli/main.py)
    from jaxport.application.conversion.api import convert  # 244 ms with NumPy: not for `convert --help`

    return convert(source, path, to="savedmodel", overwrite=overwrite,
                   options=SavedModelOptions(tuple(allowed_custom_calls), default))


def to_iree(source: Exported | Bundle | str | os.PathLike[str], path: str | os.PathLike[str], *,
            dims: Dims | None = None, target_cpu: str = "host", target_triple: str | None = None,
            overwrite: bool = False) -> ConvertedManifest:
    """``convert(source, path, to="iree", ...)``: each function compiled ahead of time by IREE.

    One ``.vmfb`` module per function and binding of its dimension
    variables (``predict.b=8.vmfb``), the bundle's weights file
    ``params.safetensors`` shared by all of them as IREE parameters.

    Args:
        dims: for each symbolic function, the bindings to compile for.
        target_cpu: ``"host"``, an LLVM CPU name (``"x86-64-v3"``), ``"generic"``.
        target_triple: the machine to compile for (``"aarch64-linux-gnu"``); None for this one.

    Raises:
        As :func:`convert`; ``MissingExtraError`` without IREE's compiler (``jaxport[iree]``).
    """
    from jaxport.domain.targets.iree import IreeOptions  # not for --help (test_purity.py; figures: cli/main.py)
    from jaxport.application.conversion.api import convert  # 244 ms with NumPy: not for `convert --help`

    return convert(source, path, to="iree", dims=dims, overwrite=overwrite,
                   options=IreeOptions(target_cpu, target_triple))


def to_onnx(source: Exported | Bundle | str | os.PathLike[str], path: str | os.PathLike[str], *,
            opset: int | None = None, ir_version: int | None = None, web: bool = False,
            quantize: str | None = None, calibration: Calibration | None = None,
            tolerance: Tolerance | float | tuple[float, float] | None = None, keep_float: Sequence[str] = (),
            auto: bool = False, overwrite: bool = False) -> ConvertedManifest:
    """``convert(source, path, to="onnx", ...)``: one ONNX model per function, for ONNX Runtime and other readers.

    One ``FUNCTION.onnx`` per function (``onnxruntime.InferenceSession(path)``
    loads it in any language; Netron shows it), of any size: dimension
    variables stay ``dim_param``s named after them. A bundle's weights stay
    in ``params.safetensors``, byte for byte, which the models read as ONNX
    external data at each tensor's offset. Inputs and outputs carry the
    wire names (``arg0``, ``arg1/dense/w``, ``output_0``). Only the standard
    ``ai.onnx`` domain is written; an operation without exact translation is
    refused, by name and source location.

    Args:
        opset: the ``ai.onnx`` opset (21 to 26), the newest a model may need; by default 21, or the opset
            a model's operations need (26: ``BitCast``, for ``bitcast_convert``, ``reduce_precision``,
            ``jnp.copysign``, ``jnp.nextafter``, a total order of NaNs).
        ir_version: the ONNX IR version (10, the default, which onnxruntime-web reads, to 13).
        web: also write ``jaxport.mjs``, which loads the directory in a web page
            with ONNX Runtime Web (see the guide's page on the browser); a
            function with a bfloat16 input or output is refused.
        quantize: None (as exported), ``"int8-weights"`` (the weights of matrix
            products and embedding gathers as int8 with one scale per output
            channel, in the directory's own weights file; the activations in
            float32), ``"int8-dynamic"`` (those int8 weights, the products' activations
            quantized per call, as ONNX Runtime's ``quantize_dynamic``) or ``"int4-weights"`` (int4 in blocks
            of 32, ``DequantizeLinear`` with ``block_size``) or ``"int8"`` (static: the
            products' activations too, in QDQ form, their ranges calibrated). The golden examples
            must pass the mode's tolerance (:mod:`jaxport.domain.converted.quantization`).
        calibration: for a calibrated mode, function name -> ``(args, kwargs)`` examples.
        tolerance: the golden examples' tolerance of a quantized conversion in place of the mode's:
            ``rtol``, ``(rtol, atol)`` or a ``Tolerance``; the manifest records it.
        keep_float: glob patterns over the weights' paths in the bundle (``"blocks/*/fc"``): the
            weights they match stay in float.
        auto: also keep in float, greedily from the largest measured contribution, the fewest weights
            that let the golden examples pass the tolerance (the manifest's ``quantization`` names them).

    Raises:
        As :func:`convert`; ``UsageError`` for a tolerance below zero or not a number, or a pattern
        that matches no weight (before anything is written); ``UnsupportedOperationError`` (a ``ConversionError``)
        for an operation the translation does not express exactly;
        ``MissingExtraError`` without the ``onnx`` package (``jaxport[onnx]``).
    """
    from jaxport.domain.targets.onnx import OnnxOptions  # not for --help (test_purity.py; figures: cli/main.py)
    from jaxport.domain.converted.quantization import parse_tolerance
    from jaxport.application.conversion.api import convert  # 244 ms with NumPy: not for `convert --help`

    defaults = OnnxOptions()
    options = OnnxOptions(opset, defaults.ir_version if ir_version is None else ir_version, web, quantize,
                          parse_tolerance(tolerance, quantize), tuple(keep_float), auto)
    return convert(source, path, to="onnx", overwrite=overwrite, calibration=calibration, options=options)


def to_litert(source: Exported | Bundle | str | os.PathLike[str], path: str | os.PathLike[str], *,
              dims: Dims | None = None, quantize: str | None = None, calibration: Calibration | None = None,
              tolerance: Tolerance | float | tuple[float, float] | None = None,
              overwrite: bool = False) -> ConvertedManifest:
    """``convert(source, path, to="litert", ...)``: each function as LiteRT (``.tflite``) models.

    One model per function, its signature named after the function, its
    inputs and outputs by their wire names; a symbolic function's dimensions
    stay dynamic where LiteRT's converter keeps them so, else ``dims`` gives
    the sizes to convert for (one model per binding: ``predict.b=8.tflite``).
    The weights are constants of each model (LiteRT's fused kernels), so
    each model holds its own copy; a generative bundle converts to one
    ``model.tflite`` whose signatures (its prefill's and decode's variants)
    share one copy. No TensorFlow is imported.

    Args:
        dims: for each symbolic function that cannot stay dynamic, the bindings to convert for.
        quantize: None (float32), ``"int8-weights"`` (int8 weights, activations float32, about
            4x smaller), ``"int8-dynamic"`` (dynamic range: the activations quantized per call too), ``"float16"`` (every float32 constant as float16) or ``"int8"``
            (weights and activations, calibrated); the golden examples must pass the
            mode's tolerance (:mod:`jaxport.domain.converted.quantization`).
        calibration: for ``"int8"``, function name -> ``(args, kwargs)`` examples
            (default: the source's golden examples).
        tolerance: the golden examples' tolerance of a quantized conversion in place of the mode's:
            ``rtol``, ``(rtol, atol)`` or a ``Tolerance``; the manifest records it.

    Raises:
        As :func:`convert`; ``MissingExtraError`` without ``jaxport[litert]`` (its converter
        has wheels for Linux x86_64 and macOS arm64).
    """
    from jaxport.domain.targets.litert import LiteRtOptions  # not for --help (test_purity.py; figures: cli/main.py)
    from jaxport.domain.converted.quantization import parse_tolerance
    from jaxport.application.conversion.api import convert  # 244 ms with NumPy: not for `convert --help`

    return convert(source, path, to="litert", dims=dims, overwrite=overwrite, calibration=calibration,
                   options=LiteRtOptions(quantize, parse_tolerance(tolerance, quantize)))
