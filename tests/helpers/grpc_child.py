"""A child process of the serving tests: ``tritonclient.grpc`` calls, read from and written to pickle files.

Run as ``python -m tests.helpers.grpc_child CALLS ANSWERS`` by
:func:`tests.helpers.serving.grpc_calls` (which says why a child).
"""

from __future__ import annotations

import pickle
import sys
from pathlib import Path
from typing import Any

import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

_DATATYPES = {"float32": "FP32", "int32": "INT32", "int64": "INT64", "float64": "FP64"}


def answer(client: Any, call: dict[str, Any]) -> Any:
    op = call["op"]
    if op == "ready":
        return client.is_server_ready()
    if op == "metadata":
        return client.get_model_metadata(call["model"], as_json=True)
    inputs = []
    for name, array in call["inputs"].items():
        tensor = grpcclient.InferInput(name, list(array.shape), _DATATYPES[str(array.dtype)])
        tensor.set_data_from_numpy(array)
        inputs.append(tensor)
    try:
        result = client.infer(call["model"], inputs,
                              outputs=[grpcclient.InferRequestedOutput(n) for n in call["outputs"]])
    except InferenceServerException as exc:
        return ("error", str(exc.status()), exc.message())
    return {n: result.as_numpy(n) for n in call["outputs"]}


def main(calls_file: str, answers_file: str) -> None:
    url, calls = pickle.loads(Path(calls_file).read_bytes())
    client = grpcclient.InferenceServerClient(url)
    Path(answers_file).write_bytes(pickle.dumps([answer(client, c) for c in calls]))


if __name__ == "__main__":
    main(*sys.argv[1:3])
