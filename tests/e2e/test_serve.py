"""End to end: ``jaxport serve`` in a subprocess on 127.0.0.1, called with tritonclient (HTTP JSON, HTTP binary, gRPC).

One bundle (run on JAX) and the directory of IREE modules converted from it
(``predict`` compiled for b = 1, 4, 8; ``loss`` for b = 2), both saved with
golden examples, which the server runs before it reports ready.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import jaxport
from tests.helpers import iree_model as model
from tests.helpers.serving import JSON, Server, http_input, infer_grpc, infer_http, shared_directories

LIMIT = 64 * 1024


@pytest.fixture(scope="module")
def directories(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return shared_directories(tmp_path_factory)


@pytest.fixture(scope="module")
def iree_server(directories: tuple[Path, Path]) -> Iterator[Server]:
    iree = directories[1]
    server = Server(iree, ("--max-request-bytes", str(LIMIT)), iree.parent / "iree.log").start()
    yield server
    assert server.stop() == 0, server.output()


@pytest.fixture(scope="module")
def onnx_server(directories: tuple[Path, Path]) -> Iterator[Server]:
    pytest.importorskip("onnxruntime", reason="serving an ONNX directory needs the jaxport[onnx] extra")
    onnx = directories[0].parent / "onnx"
    if not onnx.exists():
        jaxport.to_onnx(directories[0], onnx)
    server = Server(onnx, (), onnx.parent / "onnx.log").start()
    yield server
    assert server.stop() == 0, server.output()


@pytest.fixture(scope="module")
def bundle_server(directories: tuple[Path, Path]) -> Iterator[Server]:
    bundle = directories[0]
    server = Server(bundle, (), bundle.parent / "bundle.log").start()
    yield server
    assert server.stop() == 0, server.output()


def test_metadata_names_each_function_with_minus_one_for_the_batch_dimension(iree_server: Server) -> None:
    meta = iree_server.http().get_model_metadata("predict")
    assert (meta["inputs"], meta["outputs"]) == (
        [{"name": "arg0", "datatype": "INT32", "shape": [-1, 8]}],
        [{"name": "output_0", "datatype": "FP32", "shape": [-1, 8, 32]}])
    loss, ready = iree_server.grpc([{"op": "metadata", "model": "loss"}, {"op": "ready"}])
    assert [(t["name"], t["shape"]) for t in loss["inputs"]] == [("arg0", ["-1", "8"]), ("arg1", ["-1", "8"])]
    assert loss["outputs"] == [{"name": "output_0", "datatype": "FP32"}]  # a scalar: no shape
    assert iree_server.http().is_model_ready("loss") and ready
    with urllib.request.urlopen(f"http://{iree_server.url}/v2/models/predict", timeout=30) as response:
        described = json.loads(response.read())
    assert described["description"] == "predict(int32[b,8]) -> float32[b,8,32]; constraints: b <= 64"


@pytest.mark.parametrize("kind", ["iree", "onnx", "bundle"])
def test_results_equal_the_models_own_over_json_binary_and_grpc(
        kind: str, directories: tuple[Path, Path], request: pytest.FixtureRequest) -> None:
    server: Server = request.getfixturevalue(f"{kind}_server")
    ids = model.token_ids(4, seed=7)
    if kind == "iree":
        expected = jaxport.load_iree(directories[1])["predict"](ids)
    elif kind == "onnx":
        expected = jaxport.load_converted(directories[0].parent / "onnx")["predict"](ids)
    else:
        expected = np.asarray(model.exported()["predict"].call(model.make_params(), ids))
    for got in (infer_http(server, "predict", {"arg0": ids}, ["output_0"], binary=False),
                infer_http(server, "predict", {"arg0": ids}, ["output_0"], binary=True),
                infer_grpc(server, "predict", {"arg0": ids}, ["output_0"])):
        np.testing.assert_allclose(got["output_0"], expected, rtol=1e-6, atol=1e-6)
    ids2 = model.token_ids(2)
    loss = infer_grpc(server, "loss", {"arg0": ids2, "arg1": ids2}, ["output_0"])["output_0"]
    np.testing.assert_allclose(loss, model.exported()["loss"].call(model.make_params(), ids2, ids2), rtol=1e-5)


def test_bfloat16_travels_as_fp32_rounded_in_and_widened_out(bundle_server: Server) -> None:
    import ml_dtypes

    x = np.array([[1.1, -2.3, 3.0, 1e-3], [0.5, 7.7, -0.1, 2.0]], np.float32)
    assert bundle_server.http().get_model_metadata("double")["inputs"][0]["datatype"] == "FP32"
    expected = (x.astype(ml_dtypes.bfloat16) * 2).astype(np.float32)
    for got in (infer_http(bundle_server, "double", {"arg0": x}, ["output_0"], binary=False),
                infer_grpc(bundle_server, "double", {"arg0": x}, ["output_0"])):
        np.testing.assert_array_equal(got["output_0"], expected)


def post(server: Server, path: str, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, str]:
    request = urllib.request.Request(f"http://{server.url}{path}", data=body, method="POST",
                                     headers=headers if headers is not None else JSON)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())["error"]


def request_body(name: str, ids: np.ndarray, datatype: str = "INT32") -> bytes:
    return json.dumps({"inputs": [{"name": name, "shape": list(ids.shape), "datatype": datatype,
                                   "data": ids.ravel().tolist()}]}).encode()


BAD_REQUESTS: list[tuple[str, bytes, str]] = [
    ("unknown input", request_body("x", model.token_ids(1)),
     r"CallError: The request to 'predict' has unknown input\(s\) \['x'\] and missing input\(s\) \['arg0'\]"),
    ("wrong datatype", request_body("arg0", model.token_ids(1), "INT64"),
     r"DtypeMismatchError: Dtype mismatch for input 'arg0' \(args\[0\]\): expected INT32 and called with INT64"),
    ("wrong shape", request_body("arg0", np.zeros((1, 9), np.int32)),
     r"ShapeMismatchError: Shape mismatch for args\[0\]\.shape\[1\]"),
    ("data short of the shape", json.dumps({"inputs": [{"name": "arg0", "shape": [2, 8], "datatype": "INT32",
                                                        "data": [1, 2]}]}).encode(),
     r"CallError: The data of input 'arg0' \(args\[0\]\) does not fill its shape \[2, 8\]"),
    ("constraint violated", request_body("arg0", np.zeros((65, 8), np.int32)),
     r"ShapeAssertionError: .*b <= 64"),
    ("size not compiled", request_body("arg0", np.zeros((3, 8), np.int32)),
     r"UncompiledSizeError: No module of 'predict' was compiled for b = 3"),
    ("malformed JSON", b'{"inputs": [{"name": "arg0", "sha',
     r"CallError: The request body is not an inference request"),
    ("not a request", b'{"outputs": []}', r"CallError: The request body is not an inference request.*inputs"),
    ("body over the limit", request_body("arg0", np.zeros((LIMIT // 8, 8), np.int32)),
     rf"CallError: The request body of \d+ bytes is over the limit of {LIMIT} bytes"),
]


@pytest.mark.parametrize("case", BAD_REQUESTS, ids=[c[0] for c in BAD_REQUESTS])
def test_a_bad_request_gets_400_with_jaxports_message_and_the_server_keeps_serving(
        case: tuple[str, bytes, str], iree_server: Server) -> None:
    _, body, message = case
    status, error = post(iree_server, "/v2/models/predict/infer", body)
    assert status == 400
    assert re.search(message, error, re.DOTALL), error
    good = infer_http(iree_server, "predict", {"arg0": model.token_ids(1)}, ["output_0"], binary=True)
    assert good["output_0"].shape == (1, 8, model.VOCAB)


def test_a_request_without_a_json_content_type_is_told_which_header_to_send(iree_server: Server) -> None:
    body = request_body("arg0", model.token_ids(1))
    status, error = post(iree_server, "/v2/models/predict/infer", body, headers={})  # as curl -d sends it
    assert status == 400 and "send the header 'Content-Type: application/json'" in error, error


def test_grpc_refuses_bad_requests_with_invalid_argument_and_unknown_models_with_not_found(
        iree_server: Server) -> None:
    cases = [("predict", {"arg0": model.token_ids(1).astype(np.int64)}, "INVALID_ARGUMENT", "DtypeMismatchError"),
             ("predict", {"arg0": np.zeros((LIMIT // 8, 8), np.int32)}, "INVALID_ARGUMENT", "over the limit"),
             ("nope", {"arg0": model.token_ids(1)}, "NOT_FOUND", "nope")]
    answers = iree_server.grpc([{"op": "infer", "model": name, "inputs": inputs, "outputs": ["output_0"]}
                                for name, inputs, _, _ in cases])
    for (_, _, status, text), answer in zip(cases, answers):
        assert answer[0] == "error" and status in answer[1] and text in answer[2], answer
    assert post(iree_server, "/v2/models/nope/infer", request_body("arg0", model.token_ids(1)))[0] == 404
    assert iree_server.metric("jaxport_refused_requests_total", function="predict", error="RequestTooLarge") >= 2


def test_eight_concurrent_clients_of_two_hundred_requests_each_all_get_their_own_right_answer(
        iree_server: Server, directories: tuple[Path, Path]) -> None:
    rows = model.token_ids(16, seed=3)
    expected = jaxport.load_iree(directories[1])["predict"](np.ascontiguousarray(rows[:8]))
    expected = np.concatenate([expected, jaxport.load_iree(directories[1])["predict"](rows[8:])])
    failures: list[Any] = []

    def client(index: int) -> None:
        http = iree_server.http()
        try:
            for i in range(200):
                row = (index * 200 + i) % 16
                result = http.infer("predict", [http_input("arg0", rows[row:row + 1], binary=True)])
                if not np.allclose(result.as_numpy("output_0")[0], expected[row], rtol=1e-5, atol=1e-5):
                    failures.append((index, i, "wrong result"))
        except Exception as exc:  # noqa: BLE001 - reported below
            failures.append((index, repr(exc)))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads) and failures == []


def test_kserve_reads_none_of_the_command_line_when_jaxport_imports_it() -> None:
    probe = ("import sys\n"
             "sys.argv = ['jaxport', '--http_port', '1', '--workers', '9', '--enable_grpc', 'false']\n"
             "import jaxport.adapters.kserve.server\n"
             "from kserve import model_server\n"
             "print(model_server.args.http_port, model_server.args.workers, model_server.args.enable_grpc,"
             " sys.argv[1:3])")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[-2] == "8080 1 True ['--http_port', '1']"
