"""What converting a function for LiteRT requires, decided before anything is converted or written.

LiteRT (TensorFlow Lite) runs ``.tflite`` flatbuffers of its builtin
operators. A function converts from its CPU branch, for one device,
without ordered effects, with arguments and results of a dtype that LiteRT's
interpreter holds at its boundary (:data:`LITERT_DTYPES`). LiteRT has no
JAX kernels: the only custom call it accepts is JAX's ``shape_assertion``,
which the conversion erases (jaxport checks every call in front of the
runtime instead). The converter itself decides the rest: an operation it
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

from .artifact import ArtifactRecord, DType
from .custom_calls import CPU_LAPACK_TARGETS, HOST_CALLBACK_TARGETS
from .errors import ConversionError
from .numerics import DEFAULT_TOLERANCES, Tolerance
from .runtime_calls import leaf_paths

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


def check_convertible(name: str, record: ArtifactRecord, *, nr_weights: int) -> None:
    """Checks what the record alone says: platforms, devices, effects, dtypes.

    Args:
        name: the function's name in the converted directory.
        record: its artifact record.
        nr_weights: how many of its first flat inputs are a bundle's weights
            (folded into the model as constants; any dtype the module takes).

    Raises:
        ConversionError: no CPU platform, several devices, ordered effects, or a
            caller's argument or a result of a dtype LiteRT cannot hold (named by its path).
    """
    if "cpu" not in record.platforms:
        raise ConversionError(
            RUNTIME_NAME, name, f"it was exported for {list(record.platforms)} only; LiteRT converts the "
            "CPU branch of an artifact: export it with platforms that include 'cpu'.")
    if record.nr_devices > 1:
        raise ConversionError(
            RUNTIME_NAME, name, f"its module is for {record.nr_devices} devices (sharded); LiteRT runs "
            "single-device models: export it for one device.")
    if record.ordered_effects:
        effects = ", ".join(e.type_name for e in record.ordered_effects)
        raise ConversionError(RUNTIME_NAME, name, f"it has ordered effects ({effects}), which LiteRT "
                                                  "cannot run (it has no tokens).")
    for i, (path, aval) in enumerate(zip(leaf_paths(record.in_tree), record.in_avals)):
        if i >= nr_weights and aval.dtype not in LITERT_DTYPES:
            raise ConversionError(RUNTIME_NAME, name, f"{aval} is {_why_not(aval.dtype)}", where=path)
    for i, aval in enumerate(record.out_avals):
        if aval.dtype not in LITERT_DTYPES:
            raise ConversionError(RUNTIME_NAME, name, f"{aval} is {_why_not(aval.dtype)}", where=f"flat result {i}")


def _why_not(dtype: DType) -> str:
    if dtype.value.startswith("key<"):
        return (f"a PRNG key array ({dtype.value}), which LiteRT cannot hold: export the function "
                "taking jax.random.key_data(key), a uint32 array")
    return f"of dtype {dtype.value}, which LiteRT models cannot take or return"


def check_custom_calls(name: str, calls: Sequence[tuple[str, str]]) -> None:
    """Checks the custom calls of the module that LiteRT's converter would get.

    Args:
        name: the function's name.
        calls: per custom call, its target and its text with its location.

    Raises:
        ConversionError: naming the first custom call other than ``shape_assertion``.
    """
    for target, text in calls:
        if target in ERASED_CUSTOM_CALLS:
            continue
        if target in HOST_CALLBACK_TARGETS:
            why = ("a host callback (jax.debug.print, jax.pure_callback, io_callback), which runs "
                   "Python code of the exporting process")
        elif target in CPU_LAPACK_TARGETS:
            why = "a LAPACK kernel of JAX's CPU runtime (behind jnp.linalg), which LiteRT does not have"
        else:
            why = "a kernel of another runtime, which LiteRT does not have"
        raise ConversionError(RUNTIME_NAME, name, f"its module calls the custom call '{target}', {why}: {text}")


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
