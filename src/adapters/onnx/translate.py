"""One exported function as an ONNX model: a walk of its StableHLO module, one translation per operation.

The module (already verified) is read with jaxlib's MLIR bindings in JAX's
own context; the walk starts at ``main`` and inlines every ``func.call``.
StableHLO's operations newer than 1.23 (``fma``, ``exp2``, ``log2``) and
JAX's lgamma and digamma kernels are unfolded first, as for every runtime
target (:mod:`jaxport.adapters.mlir.unfold`).
Each operation goes through the table of :mod:`jaxport.adapters.onnx.ops.table`; an operation
absent from it, a custom call other than ``shape_assertion`` (whose checks
jaxport's call front makes before any runtime sees a call) and those of
``CUSTOM_CALLS`` (``stablehlo.dynamic_reduce_window``) or a type ONNX
Runtime does not hold is refused with
:class:`~jaxport.domain.errors.UnsupportedOperationError`, naming the
operation, the function and its source location: a converted model never
computes something else.

The model's inputs are the function's flat inputs after its leading
weights, named as the caller says; the weights become initializers whose
bytes stay in the safetensors file (ONNX external data at each tensor's
offset); the module's constants stay in the graph. Dimension variables
stay symbolic: each input dimension that is a variable is a ``dim_param``
of that name, and a variable's value, where the module takes it as an
argument (``jax.global_constant``, as ``main``'s callees do in JAX 0.10
and ``main`` itself since JAX 0.11), is the size of an input's dimension
read with ``Shape``. The model is checked with ``onnx.checker`` at full
strength, and ONNX's shape inference must agree with the signature (:mod:`jaxport.adapters.onnx.check`);
the walk over the operations is :mod:`jaxport.adapters.onnx.walk`'s.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from jaxlib.mlir import ir
from onnx import TensorProto, helper

from jaxport.domain.artifact.calling_convention import GLOBAL_CONSTANT_ATTR, PLATFORM_INDEX
from jaxport.domain.artifact.record import ArtifactRecord, AvalRecord
from jaxport.domain.errors import ArtifactError, ConversionError
from jaxport.domain.calls.front import record_shapes
from jaxport.domain.symbolic import ArgDim, ShapeAssertion, UnsolvableDimensionError, build_plan, run_plan
from jaxport.domain.targets.onnx import BFLOAT16_INPUTS, BFLOAT16_OUTPUTS, DEFAULT_IR_VERSION, DEFAULT_OPSET
from jaxport.adapters.mlir import bindings as jaxlib_mlir
from jaxport.adapters.mlir.unfold import unfolded_module
from .optimize import optimize, prune
from .builder import F32, I64, TARGET, GraphBuilder, element_dtype, narrow_float, onnx_type, round_to
from .check import check_model
from .ops.common import dim_size
from .walk import Walker
from jaxport.adapters.storage.safetensors_file import decode_header

@dataclass(frozen=True, slots=True)
class ExternalTensor:
    """Where a weight's bytes are: ``length`` bytes at ``offset`` of the file ``location`` next to the model."""

    location: str
    offset: int
    length: int


def external_tensors(header: bytes, names: Sequence[str], location: str) -> list[ExternalTensor]:
    """Each named tensor of a safetensors file, from the file's header (its bytes up to the data).

    Raises:
        ArtifactError: the header is malformed.
        KeyError: a name is not in the header.
    """
    entries, _, start = decode_header(memoryview(header), location)
    return [ExternalTensor(location, start + entries[n].begin, entries[n].end - entries[n].begin) for n in names]


def translate(record: ArtifactRecord, *, input_names: Sequence[str], output_names: Sequence[str],
              weights: Sequence[ExternalTensor] = (), metadata: Mapping[str, str] | None = None,
              producer_version: str = "", opset: int = DEFAULT_OPSET, ir_version: int = DEFAULT_IR_VERSION,
              max_opset: int | None = None) -> onnx.ModelProto:
    """The ONNX model of the exported function ``record``.

    Args:
        record: the function's record (signature and module).
        input_names: one name per flat input of ``record``, weights included.
        output_names: one name per flat output.
        weights: for each of the leading inputs that are weights, where its
            bytes are; those inputs become initializers.
        metadata: the model's ``metadata_props`` (versions, source digest).
        producer_version: the model's ``producer_version`` (producer: jaxport).
        opset: the ``ai.onnx`` opset to write (21 or later), unless an operation needs a newer one.
        max_opset: the newest opset an operation may raise the model to (by default ``opset``): an
            operation needing a newer one (``BitCast``: 26) is refused.
        ir_version: the ONNX IR version to write.

    ``main``'s platform-index argument, if any, is the index of ``"cpu"`` in the
    record's platforms (the branches for other platforms are left out).

    ``record`` has passed the ONNX target's plan
    (:data:`jaxport.domain.targets.onnx.PLAN`: one device, no ordered
    effects, the dtypes of ``ONNX_DTYPES``), which the translation does not repeat.

    Raises:
        UnsupportedOperationError: an operation with no exact translation.
        ConversionError: names that do not fit the signature, a weight whose
            bytes do not fit its shape, or a model that ``onnx.checker`` or
            ONNX's shape inference refuses.
    """
    name = record.function_name
    _check_signature(record, input_names, output_names, weights)
    platform_index = record.platforms.index("cpu") if "cpu" in record.platforms else 0
    builder = GraphBuilder(name, reserved=[*input_names, *output_names])
    builder.opset[0], builder.max_opset = opset, max(opset, opset if max_opset is None else max_opset)
    context = jaxlib_mlir.make_context()
    with context, ir.Location.unknown(context):
        module = jaxlib_mlir.deserialize_portable_artifact(record.mlir_module_serialized, context)
        try:
            module = unfolded_module(module)
        except ValueError as exc:
            raise ConversionError(TARGET, name, str(exc)) from exc
        walker = Walker(builder, module)
        main = walker.functions["main"]
        block = main.regions[0].blocks[0]
        args = _main_arguments(builder, record, main, input_names, platform_index, len(weights))
        results = walker.run_block(block, args)
    if len(results) != len(record.out_avals):
        raise ConversionError(TARGET, name, f"main returns {len(results)} values for "
                                            f"{len(record.out_avals)} outputs (tokens of effects?)")
    for value, out, aval in zip(results, output_names, record.out_avals):
        if aval.dtype.value == "float16":
            value = builder.one("Cast", [value], to=TensorProto.FLOAT16)
        elif aval.dtype.value == "bfloat16":
            value = round_to(builder, value, TensorProto.BFLOAT16)
        builder.nodes.append(helper.make_node("Identity", [value], [out]))
    initializers = [*(_external(n, a, w) for n, a, w in zip(input_names, record.in_avals, weights)),
                    *builder.initializers]
    graph = helper.make_graph(
        builder.nodes, re.sub(r"\W", "_", name),
        [_value_info(n, a) for n, a in list(zip(input_names, record.in_avals))[len(weights):]],
        [_value_info(n, a) for n, a in zip(output_names, record.out_avals)], initializer=initializers)
    prune(graph)  # the shape assertions' arithmetic goes before folding
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", builder.opset[0])], ir_version=ir_version,
                              producer_name="jaxport", producer_version=producer_version)
    helper.set_model_props(model, {**_bfloat16_ports(record, len(weights), input_names, output_names),
                                   **(metadata or {})})
    optimize(model)
    check_model(model, name)
    return model


def _main_arguments(b: GraphBuilder, record: ArtifactRecord, main: Any, input_names: Sequence[str],
                    platform_index: int, nr_weights: int) -> list[str]:
    """The ONNX names of ``main``'s arguments: kept inputs, and the values of global constants."""
    kept = iter(record.module_kept_var_idx)
    attrs = list(main.attributes["arg_attrs"]) if "arg_attrs" in main.attributes else []
    block = main.regions[0].blocks[0]
    variables: dict[str, str] | None = None
    names = []
    for i, argument in enumerate(block.arguments):
        arg_attrs = ir.DictAttr(attrs[i]) if i < len(attrs) else None
        if arg_attrs is None or GLOBAL_CONSTANT_ATTR not in arg_attrs:
            names.append(_input(b, argument, input_names, next(kept), nr_weights))
            continue
        variable = ir.StringAttr(arg_attrs[GLOBAL_CONSTANT_ATTR]).value
        dtype = element_dtype(argument.type.element_type)
        assert dtype is not None  # the calling convention makes it an integer
        if variable == PLATFORM_INDEX:
            names.append(b.scalar(platform_index, dtype))
            continue
        try:
            variables = _dimension_variables(b, record, input_names) if variables is None else variables
        except (ArtifactError, UnsolvableDimensionError) as exc:
            raise ConversionError(TARGET, record.function_name, f"its dimension variables: {exc}") from exc
        if variable not in variables:
            raise ConversionError(TARGET, record.function_name, f"main takes the dimension variable "
                                                                f"'{variable}', which no input's shape has")
        names.append(b.cast(variables[variable], dtype))
    return names


def _input(b: GraphBuilder, argument: Any, input_names: Sequence[str], j: int, nr_weights: int) -> str:
    """Input ``j``; a float16 one, or a bfloat16 weight, cast to float32 (bfloat16 inputs are float32 already)."""
    storage = narrow_float(argument)
    computed = storage is not None and (j < nr_weights or storage == TensorProto.FLOAT16)
    return b.cast(input_names[j], F32) if computed else input_names[j]


def _bfloat16_ports(record: ArtifactRecord, nr_weights: int, inputs: Sequence[str],
                    outputs: Sequence[str]) -> dict[str, str]:
    """The metadata entries naming the bfloat16 inputs and outputs (float32 at the boundary)."""
    found = {BFLOAT16_INPUTS: [n for n, a in list(zip(inputs, record.in_avals))[nr_weights:]
                               if a.dtype.value == "bfloat16"],
             BFLOAT16_OUTPUTS: [n for n, a in zip(outputs, record.out_avals) if a.dtype.value == "bfloat16"]}
    return {key: ",".join(names) for key, names in found.items() if names}


def _check_signature(record: ArtifactRecord, input_names: Sequence[str], output_names: Sequence[str],
                     weights: Sequence[ExternalTensor]) -> None:
    """What only the translation knows: the names it was given and the weights' bytes (the target's plan,
    devices, effects and dtypes, ran once in the pipeline before the converter was imported)."""
    name = record.function_name
    if len(input_names) != len(record.in_avals) or len(output_names) != len(record.out_avals):
        raise ConversionError(TARGET, name, f"{len(input_names)} input and {len(output_names)} output names "
                                            f"for {len(record.in_avals)} inputs and {len(record.out_avals)} outputs")
    if len({*input_names, *output_names}) != len(input_names) + len(output_names):
        raise ConversionError(TARGET, name, f"the input names {list(input_names)} and output names "
                                            f"{list(output_names)} are not all different")
    for n, aval, w in zip(input_names, record.in_avals, weights):
        expected = int(np.prod([int(d) for d in aval.shape])) * _itemsize(aval.dtype.value)
        if w.length != expected:
            raise ConversionError(TARGET, name, f"the weight holds {w.length} bytes, its shape {aval} "
                                                f"{expected}", where=f"input '{n}'")


def _itemsize(dtype: str) -> int:
    return 2 if dtype == "bfloat16" else np.dtype(dtype).itemsize


def _storage_type(dtype: str) -> int:
    return TensorProto.BFLOAT16 if dtype == "bfloat16" else onnx_type(np.dtype(dtype))


def _value_info(name: str, aval: AvalRecord) -> onnx.ValueInfoProto:
    shape = [int(d) if d.isdigit() else d for d in aval.shape]
    boundary = TensorProto.FLOAT if aval.dtype.value == "bfloat16" else _storage_type(aval.dtype.value)
    return helper.make_tensor_value_info(name, boundary, shape)


def _external(name: str, aval: AvalRecord, where: ExternalTensor) -> onnx.TensorProto:
    tensor = TensorProto(name=name, data_type=_storage_type(aval.dtype.value),
                         dims=[int(d) for d in aval.shape], data_location=TensorProto.EXTERNAL)
    for key, value in (("location", where.location), ("offset", str(where.offset)), ("length", str(where.length))):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    return tensor


class _OnnxDimOps:
    """Dimension arithmetic as ONNX nodes on int64 scalars, with Python's floor division and modulo."""

    def __init__(self, b: GraphBuilder) -> None:
        self.b = b

    def constant(self, value: int) -> str:
        return self.b.scalar(value, I64)

    def add(self, x: str, y: str) -> str:
        return self.b.one("Add", [x, y])

    def mul(self, x: str, y: str) -> str:
        return self.b.one("Mul", [x, y])

    def floordiv(self, x: str, y: str) -> str:
        return self.b.one("Div", [self.b.one("Sub", [x, self.mod(x, y)]), y])  # exact: y divides x - x % y

    def mod(self, x: str, y: str) -> str:
        return self.b.one("Mod", [x, y], fmod=0)  # integer Mod: the sign of the divisor, as Python's %

    def max(self, x: str, y: str) -> str:
        return self.b.one("Max", [x, y])

    def min(self, x: str, y: str) -> str:
        return self.b.one("Min", [x, y])


class _Reader:
    """Reads the inputs' dimensions for the plan; leaves its assertions to the call front."""

    def __init__(self, b: GraphBuilder, input_names: Sequence[str]) -> None:
        self.b = b
        self.input_names = input_names

    def arg_dim(self, source: ArgDim) -> str:
        return self.b.cast(dim_size(self.b, self.input_names[source.arg], source.dim), I64)

    def check(self, assertion: ShapeAssertion, lhs: Any, rhs: Any, values: Callable[[], list[Any]]) -> None:
        del assertion, lhs, rhs, values


def _dimension_variables(b: GraphBuilder, record: ArtifactRecord, input_names: Sequence[str]) -> dict[str, str]:
    """Each dimension variable of ``record``'s inputs -> the ONNX name of its value (an int64 scalar).

    A module that takes a dimension variable's value as an argument (``tensor<i32>
    {jax.global_constant = "b"}``: ``main``'s callees in JAX 0.10, ``main`` itself
    since JAX 0.11) gets it from the graph's inputs here, by the same shape plan
    that jaxport's wrapped ``main`` and its call front run
    (:func:`jaxport.domain.symbolic.run_plan`): ``b`` read from a dimension
    ``b`` with ``Shape``, ``n`` from a dimension ``2*n + 1`` as ``(dim - 1) // 2``.
    The plan's assertions are left out: jaxport's call front checks them
    before any runtime sees a call.

    Raises:
        ArtifactError: a dimension or constraint of the record does not parse.
        UnsolvableDimensionError: a variable cannot be computed from the inputs' shapes.
    """
    shapes = tuple(tuple(s) for s in record_shapes(record.in_avals, record.constraints))
    plan = build_plan(shapes, tuple(input_names))
    values: dict[str, str] = run_plan(plan, _Reader(b, input_names), _OnnxDimOps(b))
    return values
