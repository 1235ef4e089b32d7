"""One function of a directory as one KServe model: its metadata, and its requests decoded, run and encoded.

KServe parses ``sys.argv`` when it is imported (its package imports its
``model_server`` module, which reads its own options from the command line
at import): this module is the first of jaxport's to import it, and does so
with an empty command line, so that ``jaxport serve``'s options never reach
KServe. Import KServe anywhere else only after this module.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable
from typing import Any

import numpy as np

from jaxport.domain.errors import CallError, DtypeMismatchError, JaxportError
from jaxport.domain.serving.protocol import ServedFunction, WireTensor
from .metrics import ServingMetrics

_argv, sys.argv = sys.argv, sys.argv[:1]
try:
    from kserve import Model
    from kserve.errors import InvalidInput
    from kserve.protocol.infer_type import InferInput, InferOutput, InferRequest, InferResponse
finally:
    sys.argv = _argv


class FunctionModel(Model):  # type: ignore[misc]
    """One function as one protocol model: decode by its wire interface, run, encode."""

    def __init__(self, function: ServedFunction, run: Callable[[list[Any]], Any],
                 metrics: ServingMetrics) -> None:
        super().__init__(function.name)
        self.function = function
        self._run = run
        self._metrics = metrics
        self.ready = True

    def get_input_types(self) -> list[dict[str, object]]:
        """The inputs in model metadata (``-1`` for symbolic dimensions)."""
        return [t.metadata() for t in self.function.wire.inputs]

    def get_output_types(self) -> list[dict[str, object]]:
        """The outputs in model metadata."""
        return [t.metadata() for t in self.function.wire.outputs]

    async def predict(self, payload: InferRequest, headers: Any = None) -> InferResponse:
        """The response to ``payload``; a request that does not match raises :class:`Refused` (HTTP 400)."""
        wire = self.function.wire
        try:
            given = wire.order_inputs([(i.name, i) for i in payload.inputs])
            leaves = [decode(tensor, given_input) for tensor, given_input in zip(wire.inputs, given)]
            results = await self._run(leaves)
        except JaxportError as exc:
            raise Refused(self._metrics.refused(self.function.name, exc)) from exc
        outputs = [output(t, r, raw=payload.from_grpc) for t, r in zip(wire.outputs, results)]
        return InferResponse(response_id=payload.id or str(uuid.uuid4()), model_name=self.function.name,
                             infer_outputs=outputs, use_binary_outputs=payload.from_grpc or payload.use_binary_outputs,
                             requested_outputs=payload.request_outputs)


def decode(tensor: WireTensor, given: InferInput) -> Any:
    """A request's tensor as the host array the function takes.

    Raises:
        DtypeMismatchError: its datatype is not the input's.
        CallError: its data does not fill its shape.
    """
    where = f"input '{tensor.name}' ({tensor.path})"
    if given.datatype != tensor.datatype:
        raise DtypeMismatchError(where, tensor.datatype, str(given.datatype))
    try:
        array = given.as_numpy()
    except (ValueError, TypeError, InvalidInput) as exc:
        raise CallError(f"The data of {where} does not fill its shape {list(given.shape)} of "
                        f"{given.datatype}: {exc}") from exc
    if tensor.widened:  # bfloat16 travels as FP32: rounded to nearest even here
        import ml_dtypes  # here: 3 ms that a server without bfloat16 inputs never pays

        array = array.astype(ml_dtypes.bfloat16)
    return array


def output(tensor: WireTensor, result: Any, *, raw: bool) -> InferOutput:
    """A result as the protocol's output; ``raw``: as bytes already (gRPC's ``raw_output_contents``;
    KServe's gRPC encoder cannot take a NumPy array)."""
    array = np.asarray(result)
    if tensor.widened:  # bfloat16 travels as FP32, widened exactly
        array = array.astype(np.float32)
    output = InferOutput(name=tensor.name, shape=list(array.shape), datatype=tensor.datatype,
                         data=None if raw else array)
    if raw:
        output.set_data_from_numpy(np.require(array, requirements="C"), binary_data=True)
    return output


class Refused(InvalidInput):  # type: ignore[misc]
    """A request refused by jaxport: counted and logged already (KServe's own refusals are not)."""


def too_large(size: int | None, limit: int, option: str = "--max-request-bytes") -> CallError:
    """The error of a request larger than ``option`` (``--max-request-bytes``) says."""
    got = f"of {size} bytes" if size is not None else "larger than that"
    return CallError(f"The request body {got} is over the limit of {limit} bytes ({option})")
