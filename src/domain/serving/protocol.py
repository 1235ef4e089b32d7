"""A function as the Open Inference Protocol ("KServe v2") sees it: named tensors, datatypes, ``-1`` dims.

A served function is one protocol model. Its inputs are the caller's flat
arguments (a bundle's weights are not inputs) and its outputs the flat
results, each named by the wire-name rule (:mod:`jaxport.domain.calls.wire_names`), typed by
:data:`OIP_DATATYPES` and shaped with ``-1`` for every dimension that is not a
constant. This module also decides which functions may have requests joined
into one call (:func:`batch_variable`) and maps a request's named tensors onto
the function's flat inputs (:meth:`WireInterface.order_inputs`).

It knows no server, no array library and no runtime
(:mod:`jaxport.application.serving.service` serves a directory with it).

``bfloat16`` has no datatype in the protocol (its JSON and gRPC codecs have
none): a ``bfloat16`` input or output is served as ``FP32``. An ``FP32``
input is rounded to ``bfloat16`` to nearest even before the call, and a
``bfloat16`` output widened to ``FP32`` exactly. Every other dtype without a
protocol datatype (complex, the 8-bit and 4-bit floats and integers, PRNG
keys) is refused when the server starts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, TypeVar

from jaxport.domain.artifact.info import WIDTH, signature_text
from jaxport.domain.artifact.record import AvalRecord, DType
from jaxport.domain.calls.signature import Signature
from jaxport.domain.errors import CallError, ConversionError, UsageError

#: What the protocol calls this target in refusals.
OIP = "the Open Inference Protocol"

#: Each dtype the protocol can carry -> its datatype. ``bfloat16`` is served as ``FP32``
#: (see the module's docstring).
OIP_DATATYPES: Mapping[DType, str] = MappingProxyType({
    DType.BOOL: "BOOL",
    DType.INT8: "INT8", DType.INT16: "INT16", DType.INT32: "INT32", DType.INT64: "INT64",
    DType.UINT8: "UINT8", DType.UINT16: "UINT16", DType.UINT32: "UINT32", DType.UINT64: "UINT64",
    DType.FLOAT16: "FP16", DType.FLOAT32: "FP32", DType.FLOAT64: "FP64",
    DType.BFLOAT16: "FP32",
})

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class WireTensor:
    """One input or output on the wire.

    Attributes:
        name: its protocol name.
        path: its path in the function's pytree (``args[0]``, ``out['y']``), for messages.
        dtype: the function's dtype name (``"bfloat16"``).
        datatype: the protocol's datatype (``"FP32"`` for ``bfloat16``).
        dims: each dimension: an int, or the text of a symbolic one (``"b"``).
    """

    name: str
    path: str
    dtype: str
    datatype: str
    dims: tuple[int | str, ...]

    @property
    def shape(self) -> list[int]:
        """The shape in model metadata: ``-1`` for each symbolic dimension.

        >>> WireTensor("arg0", "args[0]", "float32", "FP32", ("b", 8)).shape
        [-1, 8]
        """
        return [d if isinstance(d, int) else -1 for d in self.dims]

    @property
    def widened(self) -> bool:
        """Whether the wire carries a wider type than the function's (``bfloat16`` as ``FP32``)."""
        return self.dtype == DType.BFLOAT16.value

    def metadata(self) -> dict[str, object]:
        """The tensor's entry in model metadata: ``{"name", "datatype", "shape"}``."""
        return {"name": self.name, "datatype": self.datatype, "shape": self.shape}


@dataclass(frozen=True, slots=True)
class WireInterface:
    """A function's inputs and outputs on the wire, in flat order."""

    function: str
    inputs: tuple[WireTensor, ...]
    outputs: tuple[WireTensor, ...]

    def order_inputs(self, given: Sequence[tuple[str, T]]) -> list[T]:
        """The request's tensors in the function's flat order, from ``(name, tensor)`` pairs.

        Raises:
            CallError: a name is unknown, given twice, or an input is missing;
                the message names them and lists the function's inputs.
        """
        by_name: dict[str, T] = {}
        for name, tensor in given:
            if name in by_name:
                raise CallError(f"The request gives the input '{name}' of '{self.function}' twice")
            by_name[name] = tensor
        expected = [t.name for t in self.inputs]
        unknown = sorted(set(by_name) - set(expected))
        missing = [n for n in expected if n not in by_name]
        if unknown or missing:
            parts = ([f"unknown input(s) {unknown}"] if unknown else []) + \
                ([f"missing input(s) {missing}"] if missing else [])
            raise CallError(f"The request to '{self.function}' has {' and '.join(parts)}; "
                            f"its inputs are {expected}")
        return [by_name[n] for n in expected]


def wire_interface(function: str, signature: Signature, in_paths: Sequence[str],
                   out_paths: Sequence[str]) -> WireInterface:
    """The wire view of ``signature``, the caller's signature of ``function``.

    Its tensors are named by the converted-directory rule (:mod:`jaxport.domain.calls.wire_names`):
    ``arg0``, ``arg1/dense/w``, keyword names; ``output_0`` or a dict result's key paths; other
    characters escaped as ``.XX``, so that no two leaves share a name.

    Args:
        function: the function's name.
        signature: its signature as the caller sees it (a bundle's weights left out).
        in_paths, out_paths: each flat input's and output's pytree path, for messages.

    Raises:
        ConversionError: an input or output has a dtype the protocol cannot carry.
    """
    return WireInterface(function, _tensors(function, signature.input_names, in_paths, signature.in_avals),
                         _tensors(function, signature.output_names, out_paths, signature.out_avals))


def _tensors(function: str, names: Sequence[str], paths: Sequence[str],
             avals: Sequence[AvalRecord]) -> tuple[WireTensor, ...]:
    tensors = []
    for name, path, aval in zip(names, paths, avals, strict=True):
        datatype = OIP_DATATYPES.get(aval.dtype)
        if datatype is None:
            raise ConversionError(OIP, function, f"the dtype {aval.dtype.value} has no datatype in the "
                                  "protocol (it carries bool, integers and FP16/FP32/FP64; bfloat16 as FP32)",
                                  where=path)
        dims = tuple(int(d) if d.isdigit() else d for d in aval.shape)
        tensors.append(WireTensor(name, path, aval.dtype.value, datatype, dims))
    return tuple(tensors)


def batch_variable(wire: WireInterface) -> str:
    """The dimension variable that every input and output leads with, and that only they hold.

    Only such a function's rows are independent enough to join requests:
    each input and output must start with the same lone variable (``b``), and
    no other dimension may mention it.

    >>> x = WireTensor("arg0", "args[0]", "float32", "FP32", ("b", 8))
    >>> batch_variable(WireInterface("predict", (x,), (WireTensor("output_0", "out", "float32", "FP32", ("b",)),)))
    'b'

    Raises:
        UsageError: the function does not qualify; the message says which tensor does not.
    """
    tensors = (*wire.inputs, *wire.outputs)
    if not wire.inputs:
        raise UsageError(f"--batch {wire.function}: the function takes no inputs, so there is no "
                         "batch dimension to join requests along")
    lead = tensors[0].dims[0] if tensors[0].dims else None
    first = lead if isinstance(lead, str) and lead.isidentifier() else ""
    for tensor in tensors:
        if not first or not tensor.dims or tensor.dims[0] != first:
            raise UsageError(
                f"--batch {wire.function}: its {tensor.path} ('{tensor.name}', dims "
                f"{list(tensor.dims)}) does not lead with the batch dimension variable "
                f"{first or '(none)'}; requests are joined only for functions whose "
                "inputs and outputs all lead with one batch dimension variable")
        if any(isinstance(d, str) and first in _names(d) for d in tensor.dims[1:]):
            raise UsageError(f"--batch {wire.function}: its {tensor.path} ('{tensor.name}') uses the "
                             f"batch dimension {first} beyond its first dimension {list(tensor.dims)}")
    return first


def _names(dim: str) -> set[str]:
    """The identifiers in a dimension's text (``"2*b + h"`` -> ``{"b", "h"}``)."""
    return set(re.findall(r"\w+", dim))


#: Flat host arrays in, flat host arrays out.
FlatCall = Callable[[list[Any]], list[Any]]


@dataclass(frozen=True)
class ServedFunction:
    """One function of a directory, ready to serve.

    Attributes:
        name: the function's name (its protocol model's name).
        signature: its signature as the caller sees it (a bundle's weights left out).
        wire: its inputs and outputs on the wire.
        compiled: the bindings of dimension variables a module was compiled
            for (IREE), or empty where any size runs.
        check: checks a call's flat arguments (jaxport's errors); returns the
            dimension variables' values.
        run: checks, then runs a call on flat host arrays; returns the flat results.
        runtime: the runtime's name (``"jax"``, ``"iree"``, ``"tf"``).
    """

    name: str
    signature: Signature
    wire: WireInterface
    compiled: tuple[dict[str, int], ...]
    check: Callable[[Sequence[Any]], dict[str, int]]
    run: FlatCall
    runtime: str

    @property
    def description(self) -> str:
        """The signature and its constraints, for the model's metadata (where dims are ``-1``).

        >>> from jaxport.domain.artifact.record import TreeSpec
        >>> sig = Signature("f", TreeSpec.of_tuple(TreeSpec.of_tuple(TreeSpec.leaf()), TreeSpec.of_dict({})),
        ...                 (AvalRecord(("b", "t"), DType.INT32),), TreeSpec.leaf(),
        ...                 (AvalRecord(("b",), DType.FLOAT32),), ("t <= 128",))
        >>> ServedFunction("f", sig, WireInterface("f", (), ()), (), dict, list, "jax").description
        'f(int32[b,t]) -> float32[b]; constraints: t <= 128'
        """
        constraints = f"; constraints: {', '.join(self.signature.constraints)}" if self.signature.constraints else ""
        return f"{self.name}{signature_text(self.signature, width=WIDTH)}{constraints}"

    def compiled_sizes(self, variable: str) -> tuple[int, ...]:
        """The sizes of ``variable`` that modules were compiled for (empty: any size runs)."""
        return tuple(sorted({b[variable] for b in self.compiled if variable in b}))
