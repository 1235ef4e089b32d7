"""The ONNX Runtime adapter: external data checked before ONNX Runtime opens a model, options passed, no JAX.

The hostile models are written by hand with ``onnx.helper``: one ``Add`` of
an input and an initializer whose external data points where the test says.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx", reason="the ONNX tests need the jaxport[onnx] extra (onnx)")
pytest.importorskip("onnxruntime", reason="the ONNX tests need the jaxport[onnx] extra (onnxruntime)")

import onnx  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

from jaxport.adapters.onnx.runtime import OnnxRuntimeModel, check_external_data  # noqa: E402
from jaxport.errors import ArtifactCallError, ArtifactError, UsageError  # noqa: E402

WEIGHTS = np.arange(4, dtype=np.float32)


def write_model(directory: Path, location: str) -> Path:
    """``y = x + w`` with ``w`` (float32[4]) read from ``location`` at offset 8; the bytes written there too."""
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4], data_location=TensorProto.EXTERNAL)
    for key, value in (("location", location), ("offset", "8"), ("length", "16")):
        entry = w.external_data.add()
        entry.key, entry.value = key, value
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n"])], initializer=[w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    directory.mkdir(parents=True, exist_ok=True)
    target = Path(location) if os.path.isabs(location) else directory / location
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.exists():
        target.write_bytes(b"\0" * 8 + WEIGHTS.tobytes())
    path = directory / "f.onnx"
    onnx.save(model, str(path))
    return path


def test_a_model_reading_a_listed_file_runs(tmp_path: Path) -> None:
    path = write_model(tmp_path / "model", "params.safetensors")
    model = OnnxRuntimeModel(path, allowed=["params.safetensors"], threads=1, optimization="disable")
    (y,) = model.run([np.ones(4, np.float32)])
    np.testing.assert_array_equal(y, WEIGHTS + 1)
    assert (model.input_names, model.output_names) == (["x"], ["y"])


def test_a_scalar_input_keeps_its_rank(tmp_path: Path) -> None:
    """A scalar reaches ONNX Runtime as a scalar (not an array of one element): ``Concat`` of it
    unsqueezed with a vector runs, and a scalar result is a scalar."""
    graph = helper.make_graph(
        [helper.make_node("Unsqueeze", ["s", "axes"], ["u"]), helper.make_node("Concat", ["v", "u"], ["y"], axis=0),
         helper.make_node("Identity", ["s"], ["z"])], "g",
        [helper.make_tensor_value_info("s", TensorProto.FLOAT, []), helper.make_tensor_value_info(
            "v", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3]), helper.make_tensor_value_info(
            "z", TensorProto.FLOAT, [])], initializer=[onnx.numpy_helper.from_array(np.array([0], np.int64), "axes")])
    path = tmp_path / "scalar.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10), str(path))
    model = OnnxRuntimeModel(path, threads=1)
    for scalar in (np.array(1.5, np.float32), np.float32(1.5)):
        y, z = model.run([scalar, np.array([3.0, 4.0], np.float32)[::-1]])
        np.testing.assert_array_equal(y, [4.0, 3.0, 1.5])
        assert z.shape == ()


@pytest.mark.parametrize("location", ["../secret.bin", "sub/../../secret.bin", "other.bin"])
def test_external_data_outside_the_listed_files_is_refused_before_onnx_runtime_opens_it(
        tmp_path: Path, location: str) -> None:
    path = write_model(tmp_path / "model", location)
    with pytest.raises(ArtifactError, match=f"the tensor 'w' reads its data from '{location}'"):
        OnnxRuntimeModel(path, allowed=["params.safetensors"])


def test_an_absolute_location_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret.bin"
    path = write_model(tmp_path / "model", str(secret))
    with pytest.raises(ArtifactError, match="reads its data from '/"):
        check_external_data(path, [str(secret), "params.safetensors"])


def test_a_listed_name_that_is_a_link_out_of_the_directory_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "secret.bin"
    outside.write_bytes(b"\0" * 8 + WEIGHTS.tobytes())
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "params.safetensors").symlink_to(outside)
    path = write_model(tmp_path / "model", "params.safetensors")
    with pytest.raises(ArtifactError, match="reads its data from 'params.safetensors'"):
        OnnxRuntimeModel(path, allowed=["params.safetensors"])


def test_a_location_that_is_not_utf8_is_refused_naming_the_file(tmp_path: Path) -> None:
    path = write_model(tmp_path / "model", "weights-XX.bin")
    path.write_bytes(path.read_bytes().replace(b"weights-XX.bin", b"weights-\xff\xfe.bin"))
    with pytest.raises(ArtifactError, match=r"f.onnx: the tensor 'w' reads its data from "
                                            r"'weights-\\xff\\xfe.bin', which is not valid UTF-8"):
        OnnxRuntimeModel(path, allowed=["params.safetensors"])


def test_a_damaged_model_file_is_refused(tmp_path: Path) -> None:
    path = write_model(tmp_path / "model", "params.safetensors")
    path.write_bytes(path.read_bytes()[:-7] + b"\xff" * 7)
    with pytest.raises(ArtifactError, match="f.onnx is not a valid ONNX model"):
        OnnxRuntimeModel(path, allowed=["params.safetensors"])


@pytest.mark.parametrize("option, message", [
    ({"optimization": "fastest"}, "optimization is one of"), ({"threads": 1.5}, "threads=1.5 is not an int >= 0"),
    ({"inter_op_threads": True}, "inter_op_threads=True is not"), ({"spinning": "no"}, "spinning='no' is not a bool"),
    ({"providers": []}, r"providers=\[\] is not a list")])
def test_bad_session_options_are_usage_errors(tmp_path: Path, option: dict[str, object], message: str) -> None:
    path = write_model(tmp_path / "model", "params.safetensors")
    with pytest.raises(UsageError, match=message):
        OnnxRuntimeModel(path, allowed=["params.safetensors"], **option)  # type: ignore[arg-type]


def test_session_options_pass_through_and_are_checked(tmp_path: Path) -> None:
    path = write_model(tmp_path / "model", "params.safetensors")
    model = OnnxRuntimeModel(path, allowed=["params.safetensors"], threads=2, inter_op_threads=1,
                             optimization="basic", providers=["CPUExecutionProvider"])
    with pytest.raises(ArtifactCallError, match="Calling the exported function 'f' failed"):
        model.run([np.ones((2, 2), np.float32)])


CHILD = """
import sys
import numpy as np
from jaxport.adapters.onnx.runtime import OnnxRuntimeModel
(y,) = OnnxRuntimeModel(sys.argv[1], allowed=["params.safetensors"]).run([np.ones(4, np.float32)])
assert (y == np.arange(4) + 1).all(), y
print(sorted(m for m in ("jax", "jaxlib", "tensorflow", "onnx") if m in sys.modules))
"""


def test_running_a_model_imports_neither_jax_nor_jaxlib_nor_onnx(tmp_path: Path) -> None:
    path = write_model(tmp_path / "model", "params.safetensors")
    done = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
