"""What LiteRT's converter and interpreter refuse, decided before anything is written; its tolerances.

LiteRT (TensorFlow Lite) runs ``.tflite`` flatbuffers of its builtin
operators. What the record alone says (platform, devices, effects, the
dtypes of :data:`LITERT_DTYPES`, custom calls other than ``shape_assertion``)
is the target plan's (:data:`.target_litert.PLAN`). The converter decides the rest: an operation it
cannot legalize, an operator it leaves as a custom or Flex (Select TF) op,
or a builtin that LiteRT's interpreter has no kernel for are each refused
by name. A symbolic function converts to one model whose symbolic
dimensions stay dynamic (``shape_signature`` -1) where the converter can
keep them so; otherwise (``stablehlo.dynamic_gather``, for one) it is
converted once per binding of its dimension variables that the caller names.

This module knows no MLIR and no flatbuffer: the adapters report operation
and operator names, this module says which it refuses and why.
"""

from __future__ import annotations

from collections.abc import Sequence

from .artifact import DType
from .errors import ConversionError
from .numerics import DEFAULT_TOLERANCES, Tolerance

#: The runtime, as messages name it.
RUNTIME_NAME = "LiteRT"
#: The custom calls the conversion erases.
ERASED_CUSTOM_CALLS = frozenset({"shape_assertion"})
#: The one quantization a conversion offers: weights as int8 (dynamic range), activations float32.
INT8_WEIGHTS = "int8-weights"
QUANTIZATIONS = (INT8_WEIGHTS,)

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

#: Operators of the converted model that LiteRT's interpreter cannot run without TensorFlow.
FLEX_PREFIX = "Flex"

#: The tolerance of a float32 conversion against JAX, normwise as :mod:`.numerics` compares
#: (``err <= atol + rtol * ref``, ``ref`` the output's largest magnitude): float32's default.
#: LiteRT's kernels (XNNPACK's, picked by the CPU's instruction set, or its builtin ones) sum in
#: other orders than XLA's and fuse GELU and layer norms: measured within 3e-7 of the output's
#: magnitude, with XNNPACK and without.
FLOAT32_TOLERANCE = DEFAULT_TOLERANCES["float32"]
#: The tolerance of an ``int8-weights`` conversion, normwise: 5% of the output's largest
#: magnitude. Each weight is rounded to one of 255 levels per output channel and each activation
#: entering a fully connected layer too (dynamic range); measured at 0.6-1.2% through two to
#: four layers.
INT8_WEIGHTS_TOLERANCE = Tolerance(rtol=0.05, atol=1e-6)


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
    if symbolic:
        variables = ", ".join(symbolic)
        advice = (f"; with symbolic shapes (dimension variables {variables}) LiteRT's converter may "
                  f"legalize it for static ones: give the sizes to convert for, as dims={{'{name}': "
                  f"[{{{', '.join(repr(v) + ': 8' for v in symbolic)}}}, ...]}} (on the command line "
                  f"--dims {name}:{','.join(v + '=8' for v in symbolic)})")
    else:
        advice = ""
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


def check_quantize(quantize: str | None) -> None:
    """Checks the name of a quantization.

    >>> check_quantize(None); check_quantize("int8-weights")

    Raises:
        ValueError: an unknown name (the message lists the known ones).
    """
    if quantize is not None and quantize not in QUANTIZATIONS:
        raise ValueError(f"Unknown quantization {quantize!r} for LiteRT: give one of {list(QUANTIZATIONS)} or None")


def check_names(name: str, kind: str, names: Sequence[str], count: int) -> None:
    """Checks the wire names of a model's inputs or outputs: one per flat value, distinct.

    Raises:
        ValueError: a wrong count or a repeated name.
    """
    if len(names) != count:
        raise ValueError(f"'{name}' has {count} flat {kind}s, and {len(names)} {kind} names were given")
    if len(set(names)) != len(names):
        repeated = sorted({n for n in names if list(names).count(n) > 1})
        raise ValueError(f"'{name}' was given the {kind} names {repeated} more than once")


def tolerance(quantize: str | None) -> Tolerance:
    """The tolerance of a conversion against JAX, for its floating outputs (the others are exact).

    >>> tolerance(None), tolerance("int8-weights")
    (Tolerance(rtol=1e-05, atol=1e-06), Tolerance(rtol=0.05, atol=1e-06))
    """
    return INT8_WEIGHTS_TOLERANCE if quantize == INT8_WEIGHTS else FLOAT32_TOLERANCE
