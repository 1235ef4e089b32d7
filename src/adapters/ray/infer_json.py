"""The Open Inference Protocol's JSON ``infer`` body, read into NumPy arrays and written back, by wire names.

The body that ``jaxport serve`` takes at ``POST /v2/models/NAME/infer``
(``{"inputs": [{"name", "shape", "datatype", "data"}], "id"}``) and the
response it gives (``{"model_name", "id", "outputs": [...]}``, ``data``
flat in row-major order), so that a client of one talks to Ray Serve's
deployment unchanged. ``bfloat16`` travels as ``FP32`` (see
:mod:`jaxport.domain.serving.protocol`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from jaxport.domain.errors import CallError, DtypeMismatchError
from jaxport.domain.artifact.record import DType
from jaxport.domain.serving.protocol import OIP_DATATYPES, WireTensor

#: Each protocol datatype -> NumPy's dtype (``FP32`` also carries ``bfloat16``).
NUMPY_OF = {datatype: np.dtype(dtype.value) for dtype, datatype in OIP_DATATYPES.items() if dtype is not DType.BFLOAT16}


def read_inputs(function: str, inputs: Sequence[WireTensor], body: Any) -> dict[str, Any]:
    """The request's tensors as arrays, by wire name (which ones are given is the batch interface's check).

    Raises:
        CallError: the body is not an ``infer`` body, or a tensor's data does not fill its shape.
        DtypeMismatchError: a tensor's datatype is not its input's.
    """
    given = body.get("inputs") if isinstance(body, Mapping) else None
    if not isinstance(given, list) or not all(isinstance(t, Mapping) for t in given):
        raise CallError(f"The request to '{function}' is not an infer body: it needs \"inputs\", a list of "
                        "{\"name\", \"shape\", \"datatype\", \"data\"}")
    by_name = {t.name: t for t in inputs}
    arrays: dict[str, Any] = {}
    for tensor in given:
        name = str(tensor.get("name"))
        wire = by_name.get(name)
        if wire is None:
            arrays[name] = None  # unknown: the batch interface names it with the function's inputs
            continue
        arrays[name] = _array(wire, tensor)
    return arrays


def _array(wire: WireTensor, tensor: Mapping[str, Any]) -> Any:
    where = f"input '{wire.name}' ({wire.path})"
    datatype = tensor.get("datatype")
    if datatype != wire.datatype:
        raise DtypeMismatchError(where, wire.datatype, str(datatype))
    shape = tensor.get("shape")
    try:
        array: Any = np.asarray(tensor.get("data"), dtype=NUMPY_OF[wire.datatype]).reshape(shape)
    except (ValueError, TypeError) as exc:
        raise CallError(f"The data of {where} does not fill its shape {shape} of {datatype}: {exc}") from exc
    if wire.widened:  # bfloat16 travels as FP32: rounded to nearest even here
        import ml_dtypes  # here: a deployment without bfloat16 inputs never loads it

        array = array.astype(ml_dtypes.bfloat16)
    return array


def write_outputs(function: str, outputs: Sequence[WireTensor], results: Mapping[str, Any],
                  request_id: object = None) -> dict[str, Any]:
    """The response body of the results (wire name -> array)."""
    written = []
    for wire in outputs:
        array = np.asarray(results[wire.name])
        if wire.widened:  # bfloat16 travels as FP32, widened exactly
            array = array.astype(np.float32)
        written.append({"name": wire.name, "datatype": wire.datatype, "shape": list(array.shape),
                        "data": array.reshape(-1).tolist()})
    body: dict[str, Any] = {"model_name": function, "outputs": written}
    if request_id is not None:
        body["id"] = request_id
    return body


def rows_of(batch: Mapping[str, Any]) -> int:
    """The rows of a request (its first array's leading dimension; 0 without one)."""
    for array in batch.values():
        shape: tuple[int, ...] = tuple(getattr(array, "shape", ()))
        return int(shape[0]) if shape else 0
    return 0
