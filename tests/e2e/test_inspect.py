"""End to end: ``jaxport.inspect`` summarizes an artifact without importing JAX."""

from __future__ import annotations

import dataclasses
import functools
import importlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport
from jaxport.adapters.mlir.bindings import export_target_version
from jaxport.adapters.flatbuffers.codec import decode_artifact, encode_artifact
from jaxport.domain.artifact.record import EffectRecord
from jaxport.errors import ArtifactError

DATA = "jax._src.internal_test_util.export_back_compat_test_data"
PARAMS = {"w": np.ones((3, 4), np.float32), "b": np.zeros(4, np.int8)}
X = np.ones((2, 3), np.float32)


def f(params: dict[str, Any], x: Any, *, scale: Any) -> Any:
    return {"y": x @ params["w"] * scale, "n": [jnp.sum(x).astype(jnp.bfloat16), None]}


@functools.cache
def exported() -> jaxport.Exported:
    checks = [jaxport.DisabledSafetyCheck.custom_call("my_target"), jaxport.DisabledSafetyCheck.platform()]
    return jaxport.export(jax.jit(f), platforms=("cpu", "tpu"), disabled_checks=checks)(
        PARAMS, X, scale=np.float32(2.0))


@functools.cache
def blob(vjp_order: int = 0) -> bytes:
    return bytes(exported().serialize(vjp_order))


def wheel_blob(module: str, version: int) -> bytes:
    for entry in importlib.import_module(f"{DATA}.{module}").serializations:
        if entry["serialization_version"] == version:
            return bytes(entry["exported_serialized"])
    raise LookupError(f"{module} has no blob of version {version}")


def test_inspect_summarizes_name_signature_platforms_and_versions() -> None:
    info = jaxport.inspect(blob())
    assert isinstance(info, jaxport.ArtifactInfo)
    assert info.fun_name == "f"
    assert info.signature == ("({'b': int8[4], 'w': float32[3,4]}, float32[2,3], scale=float32[]) "
                              "-> {'n': [bfloat16[], None], 'y': float32[2,4]}")
    assert info.platforms == ("cpu", "tpu")
    assert info.calling_convention_version == 10
    assert info.nr_devices == 1
    assert info.in_shardings == ("unspecified",) * 4 and info.out_shardings == ("unspecified",) * 2
    assert info.ordered_effects == () and info.unordered_effects == ()
    assert info.disabled_checks == ("custom_call:my_target", "platform")
    assert info.module_size == len(exported().mlir_module_serialized)
    assert info.stablehlo_version == export_target_version()
    assert (info.vjp_order, info.has_vjp) == (0, False)


def test_inspect_of_bytes_and_of_a_path_give_the_same_summary(tmp_path: Path) -> None:
    path = tmp_path / "f.jaxexport"
    jaxport.save(exported(), path)
    from_bytes = jaxport.inspect(blob())
    assert jaxport.inspect(path) == from_bytes
    assert jaxport.inspect(str(path)) == from_bytes
    assert jaxport.inspect(bytearray(blob())) == from_bytes
    assert jaxport.inspect(memoryview(blob())) == from_bytes


@pytest.mark.parametrize("vjp_order", [1, 2])
def test_inspect_reports_the_order_of_the_included_vjps(vjp_order: int) -> None:
    info = jaxport.inspect(blob(vjp_order))
    assert (info.vjp_order, info.has_vjp) == (vjp_order, True)
    assert f"vjp order: {vjp_order}" in str(info)


def test_the_text_form_lists_everything_on_a_few_lines() -> None:
    text = str(jaxport.inspect(blob()))
    assert text.splitlines()[0] == "f" + jaxport.inspect(blob()).signature
    assert "platforms: cpu, tpu; devices: 1; calling convention: 10" in text
    assert f"module: {len(exported().mlir_module_serialized)} bytes, StableHLO {export_target_version()}" in text
    assert "disabled checks: custom_call:my_target, platform" in text


def test_the_signature_shows_symbolic_dimensions() -> None:
    b, = jax.export.symbolic_shape("b")
    exp = jax.export.export(jax.jit(lambda x: jnp.concatenate([x, x]).sum(axis=1)))(
        jax.ShapeDtypeStruct((b, 4), jnp.float32))
    assert jaxport.inspect(exp.serialize()).signature == "(float32[b,4]) -> float32[2*b]"


def test_named_shardings_are_shown_as_partition_specs_over_the_mesh() -> None:
    info = jaxport.inspect(wheel_blob("export_with_specified_sharding", 11))
    assert info.in_shardings == ("P('x', None) over {x: 2} [device]",)
    assert info.out_shardings == ("P(None, 'x') over {x: 2} [device]",)
    assert info.nr_devices == 2
    assert "in shardings: P('x', None) over {x: 2} [device]" in str(info)


def oldest_wheel_blob(module: str) -> tuple[int, bytes]:
    """The oldest serialization version of ``module`` that the installed JAX ships, and its blob.

    JAX 0.12 no longer ships the blobs of versions 4 and 5 (its oldest is 6).
    """
    entries = importlib.import_module(f"{DATA}.{module}").serializations
    oldest = min(entries, key=lambda e: int(e["serialization_version"]))
    return int(oldest["serialization_version"]), bytes(oldest["exported_serialized"])


def test_legacy_hlo_shardings_and_unspecified_ones_are_shown() -> None:
    version, data = oldest_wheel_blob("export_with_unspecified_sharding")
    if version > 5:
        pytest.skip(f"the installed JAX ships no blob with HLO shardings (versions 4 and 5); its oldest is {version}")
    info = jaxport.inspect(data)
    assert info.in_shardings == ("hlo-sharding(12 bytes)",)
    assert info.out_shardings == ("unspecified",)


#: The oldest blob of ``export_with_memory_space`` in a JAX wheel -> its platforms and StableHLO version.
MEMORY_SPACE_BLOBS = {5: (("tpu", "cuda"), "1.13.0"), 6: (("tpu", "cuda", "rocm"), "1.13.4")}


def test_memory_spaces_and_older_stablehlo_versions_are_shown() -> None:
    version, data = oldest_wheel_blob("export_with_memory_space")
    info = jaxport.inspect(data)
    assert info.signature == "(float32<host>[2,3]) -> float32<host>[2,3]"
    assert (info.platforms, info.stablehlo_version) == MEMORY_SPACE_BLOBS[version]
    assert info.stablehlo_version != export_target_version()


def test_effects_are_listed_by_type_name() -> None:
    record = dataclasses.replace(decode_artifact(blob()),
                                 ordered_effects=(EffectRecord("<class 'my.OrderedEffect'>"),),
                                 unordered_effects=(EffectRecord("<class 'my.Effect'>"),))
    info = jaxport.inspect(encode_artifact(record))
    assert info.ordered_effects == ("<class 'my.OrderedEffect'>",)
    assert info.unordered_effects == ("<class 'my.Effect'>",)
    assert "effects: ordered [\"<class 'my.OrderedEffect'>\"]" in str(info)


@pytest.mark.parametrize("garbage", [b"", b"\x00" * 3, b"not an artifact at all" * 4, b"\xff" * 64],
                         ids=["empty", "short", "text", "ones"])
def test_inspect_of_garbage_bytes_raises_artifact_error(garbage: bytes) -> None:
    with pytest.raises(ArtifactError):
        jaxport.inspect(garbage)


def test_inspect_of_a_garbage_file_raises_artifact_error_and_of_a_missing_one_oserror(tmp_path: Path) -> None:
    path = tmp_path / "garbage.bin"
    path.write_bytes(b"\x10\x00\x00\x00garbage" * 5)
    with pytest.raises(ArtifactError):
        jaxport.inspect(path)
    with pytest.raises(FileNotFoundError):
        jaxport.inspect(tmp_path / "missing.bin")


INSPECT_IN_A_FRESH_PROCESS = """
import sys
import jaxport
info = jaxport.inspect(sys.argv[1])
loaded = sorted(m for m in sys.modules
                if m in ("jax", "jaxlib") or m.startswith(("jax.", "jaxlib.")))
# Reading a header needs no symbolic shapes, and no NumPy.
unneeded = sorted(m for m in sys.modules if m.startswith(("jaxport.domain.symbolic", "numpy")))
import json
print(json.dumps({"loaded": loaded, "unneeded": unneeded, "fun_name": info.fun_name, "signature": info.signature,
                  "vjp_order": info.vjp_order, "jaxport_loaded": "jaxport" in sys.modules}))
"""


def last_line_in_a_fresh_process(probe: str, tmp_path: Path) -> str:
    """The last line that ``probe`` prints, given the path of an artifact with a VJP."""
    path = tmp_path / "f.jaxexport"
    path.write_bytes(blob(1))
    done = subprocess.run([sys.executable, "-c", probe, str(path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


def test_inspect_loads_neither_jax_nor_jaxlib(tmp_path: Path) -> None:
    result = json.loads(last_line_in_a_fresh_process(INSPECT_IN_A_FRESH_PROCESS, tmp_path))
    assert result["jaxport_loaded"] is True
    assert result["loaded"] == []
    assert result["unneeded"] == []  # reading a header needs no symbolic shapes
    assert result["fun_name"] == "f" and result["vjp_order"] == 1
    assert result["signature"] == jaxport.inspect(blob()).signature


CLI_INSPECT_IN_A_FRESH_PROCESS = """
import sys
from jaxport.application.cli.main import main
status = main(["inspect", sys.argv[1]])
print(status, sorted(m for m in sys.modules if m in ("jax", "jaxlib", "numpy")))
"""


def test_the_inspect_command_reads_a_file_without_jax_or_numpy(tmp_path: Path) -> None:
    assert last_line_in_a_fresh_process(CLI_INSPECT_IN_A_FRESH_PROCESS, tmp_path) == "0 []"


def test_the_text_forms_show_the_constraints_of_an_artifact_a_bundle_and_a_converted_directory(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from jaxport.application.cli.main import main

    b, t = jaxport.symbolic_shape("b, t", constraints=("t <= 128",))
    params = {"s": np.full((1,), 2, np.float32)}
    exp = jaxport.export(jax.jit(lambda p, x: jnp.tanh(x * p["s"])))(
        params, jax.ShapeDtypeStruct((b, t), jnp.float32))
    jaxport.save(exp, tmp_path / "f.jaxport")
    jaxport.save_bundle(tmp_path / "model", {"f": exp}, params)
    paths = [tmp_path / "f.jaxport", tmp_path / "model"]
    if importlib.util.find_spec("onnxruntime") is not None:
        jaxport.convert(tmp_path / "model", tmp_path / "onnx", to="onnx")
        paths.append(tmp_path / "onnx")
    assert "  constraints: t <= 128" in str(jaxport.inspect(tmp_path / "f.jaxport")).splitlines()
    assert main(["inspect", *map(str, paths)]) == 0
    assert capsys.readouterr().out.count("  constraints: t <= 128\n") == len(paths)
