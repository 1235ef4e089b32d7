"""End to end: verifying artifacts on load, in a separate process."""

from __future__ import annotations

import array
import dataclasses
import fcntl
import functools
import os
import signal
import termios
import threading
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jaxlib import version as jaxlib_version

import jaxport
from jaxport import DisabledSafetyCheck
from jaxport.adapters.flatbuffers.codec import decode_artifact, encode_artifact
from jaxport.adapters.mlir.worker import ChildModuleWorker
from jaxport.application.verify_artifact import verify_artifact
from jaxport.errors import ArtifactCallError, ArtifactError

SPEC = jax.ShapeDtypeStruct((4,), jnp.float32)


def with_custom_call(x: jax.Array) -> jax.Array:
    return jax.ffi.ffi_call("my_custom_target", jax.ShapeDtypeStruct(x.shape, x.dtype))(x) + 1.0


@functools.cache
def custom_call_blob() -> bytes:
    exp = jaxport.export(jax.jit(with_custom_call),
                         disabled_checks=[DisabledSafetyCheck.custom_call("my_custom_target")])(SPEC)
    return bytes(exp.serialize())


@functools.cache
def plain_blob() -> bytes:
    return bytes(jaxport.export(jax.jit(jnp.sin))(SPEC).serialize(vjp_order=1))


def test_a_custom_call_outside_the_allowlist_is_refused_at_load_whatever_the_artifact_declares(
        tmp_path: Path) -> None:
    path = tmp_path / "custom.jaxport"
    path.write_bytes(custom_call_blob())
    with pytest.raises(ArtifactError, match="custom call to 'my_custom_target' is not allowed"):
        jaxport.load(path)
    with pytest.raises(ArtifactError, match="my_custom_target"):
        jaxport.deserialize(custom_call_blob(), verify=True)


def test_a_custom_call_named_in_allowed_custom_calls_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "custom.jaxport"
    path.write_bytes(custom_call_blob())
    loaded = jaxport.load(path, allowed_custom_calls=("my_custom_target",))
    assert loaded.disabled_safety_checks == (DisabledSafetyCheck.custom_call("my_custom_target"),)
    report = verify_artifact(path, allowed_custom_calls=["my_custom_target"])
    assert report.ok and report.reasons == ()


def test_without_verify_deserialize_obeys_the_artifact_as_jax_export_does() -> None:
    assert jaxport.deserialize(custom_call_blob()).fun_name == "with_custom_call"


def test_a_sound_artifact_verifies_and_its_verdict_is_remembered_per_digest(tmp_path: Path) -> None:
    first = verify_artifact(plain_blob())
    assert first.ok and first.sealed and first.record is not None
    again = verify_artifact(plain_blob())
    assert again.ok and again.cached and again.digest == first.digest
    jax_blob = jax.export.export(jax.jit(jnp.cos))(SPEC).serialize()
    theirs = verify_artifact(jax_blob)
    assert theirs.ok and not theirs.sealed
    path = tmp_path / "f.jaxport"
    jaxport.save(jaxport.export(jax.jit(jnp.sin))(SPEC), path, vjp_order=1)
    loaded = jaxport.load(path)
    x = np.linspace(0, 1, 4, dtype=np.float32)
    np.testing.assert_allclose(jax.grad(lambda x: loaded.call(x).sum())(x), np.cos(x), rtol=1e-6)


def test_a_main_signature_that_differs_from_the_record_is_refused() -> None:
    record = decode_artifact(plain_blob())
    other = decode_artifact(jaxport.export(jax.jit(jnp.sin))(
        jax.ShapeDtypeStruct((5,), jnp.int32)).serialize())
    lying = dataclasses.replace(record, mlir_module_serialized=other.mlir_module_serialized, vjp=None)
    report = verify_artifact(bytes(encode_artifact(lying)))
    assert not report.ok
    assert any("argument 0 of main of 'sin' has type tensor<5xi32>, but the record implies "
               "tensor<4xf32>" in r for r in report.reasons), report.reasons
    with pytest.raises(ArtifactError, match="failed verification"):
        report.raise_if_failed()


def test_a_module_that_does_not_parse_is_refused_with_the_parsers_reason() -> None:
    record = decode_artifact(plain_blob())
    module = bytearray(record.mlir_module_serialized)
    module[len(module) // 2:] = b"\x00" * (len(module) - len(module) // 2)
    damaged = dataclasses.replace(record, mlir_module_serialized=bytes(module), vjp=None)
    report = verify_artifact(bytes(encode_artifact(damaged)))
    assert not report.ok and "does not parse" in report.reasons[0]


def test_a_verifying_process_that_dies_refuses_the_artifact_and_the_caller_keeps_running() -> None:
    worker = ChildModuleWorker(address_space=64 << 20)  # too little memory to load jaxlib: it dies
    blob = jaxport.export(jax.jit(jnp.tanh))(SPEC).serialize()  # bytes no other test verifies
    report = verify_artifact(blob, worker=worker)
    assert not report.ok and "verifying process stopped" in report.reasons[0]
    assert not verify_artifact(blob, worker=worker).cached  # a death is not remembered
    assert verify_artifact(blob).ok
    worker.close()


def _bytes_waiting_for(worker: ChildModuleWorker) -> int:
    """How many bytes wait unread in the verifying process's input pipe (Linux's FIONREAD)."""
    child = worker._child
    stdin = None if child is None else child._process.stdin
    if stdin is None:
        return 0
    count = array.array("i", [0])
    fcntl.ioctl(stdin.fileno(), termios.FIONREAD, count)
    return count[0]


def test_a_verifying_process_killed_mid_request_is_replaced_by_a_new_one() -> None:
    worker = ChildModuleWorker(timeout=60.0)
    record = decode_artifact(plain_blob())
    assert worker.check(record.mlir_module_serialized, sdy=False).facts.inputs
    pid = worker.pid
    assert pid is not None
    # Stopped, the process is still alive when the request starts and cannot
    # read it: it is killed once the request's bytes wait in its input pipe, so
    # that the request was sure to be sent to it. (Killed as soon as the worker
    # holds its lock, it could die before the worker asks whether it still
    # runs: then a new process answers, as between requests.)
    os.kill(pid, signal.SIGSTOP)
    failures: list[BaseException] = []

    def request() -> None:
        try:
            worker.check(record.mlir_module_serialized, sdy=False)
        except BaseException as exc:  # noqa: BLE001  (the test reads it)
            failures.append(exc)

    waiting = threading.Thread(target=request)
    waiting.start()
    while not _bytes_waiting_for(worker) and waiting.is_alive():
        waiting.join(0.01)
    os.kill(pid, signal.SIGKILL)
    waiting.join()
    assert len(failures) == 1 and isinstance(failures[0], ArtifactError), failures
    assert "SIGKILL" in str(failures[0])
    assert worker.check(record.mlir_module_serialized, sdy=False).facts.inputs
    assert worker.pid not in (None, pid)
    worker.close()


def test_a_verifying_process_that_died_between_requests_is_replaced_without_an_error() -> None:
    worker = ChildModuleWorker(timeout=60.0)
    record = decode_artifact(plain_blob())
    worker.check(record.mlir_module_serialized, sdy=False)
    pid = worker.pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    assert worker.check(record.mlir_module_serialized, sdy=False).facts.inputs
    assert worker.pid not in (None, pid)
    worker.close()


def test_a_hanging_verifying_process_is_killed_after_the_timeout() -> None:
    worker = ChildModuleWorker(timeout=60.0)
    record = decode_artifact(plain_blob())
    worker.check(record.mlir_module_serialized, sdy=False)
    pid = worker.pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    worker._timeout = 0.5
    with pytest.raises(ArtifactError, match="did not answer in time"):
        worker.check(record.mlir_module_serialized, sdy=False)
    worker.close()


def test_a_damaged_sealed_artifact_is_refused_before_any_module_is_parsed() -> None:
    damaged = bytearray(plain_blob())
    damaged[100] ^= 1
    report = verify_artifact(damaged)
    assert not report.ok and "digest does not match" in report.reasons[0]


def test_an_xla_failure_at_call_time_is_a_typed_error_naming_the_function() -> None:
    loaded = jaxport.deserialize(custom_call_blob(), verify=True,
                                 allowed_custom_calls=("my_custom_target",))
    with pytest.raises(ArtifactCallError, match="exported function 'with_custom_call' failed") as info:
        loaded.call(np.ones(4, np.float32))
    assert isinstance(info.value, jax.errors.JaxRuntimeError)
    assert "my_custom_target" in str(info.value)


def test_a_module_that_fails_to_lower_unverified_is_a_typed_error_naming_the_function() -> None:
    record = decode_artifact(plain_blob())
    module = bytearray(record.mlir_module_serialized)
    module[len(module) // 2:] = b"\x00" * (len(module) - len(module) // 2)
    damaged = dataclasses.replace(record, mlir_module_serialized=bytes(module), vjp=None)
    loaded = jaxport.deserialize(encode_artifact(damaged))
    with pytest.raises(ArtifactCallError, match="exported function 'sin' failed"):
        loaded.call(np.ones(4, np.float32))
    with pytest.raises(ArtifactCallError, match="exported function 'sin' failed"):
        jax.jit(loaded.call)(np.ones(4, np.float32))


CRASHING_TEXT = """
func.func public @main(%arg0: tensor<4x3xf32>) -> tensor<4x4xf32> {
  %0 = stablehlo.sine %arg0 : tensor<4x3xf32>
  %1 = stablehlo.dot_general %0, %arg0, contracting_dims = [1] x [1] : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x4xf32>
  %2 = stablehlo.add %1, %1 : tensor<4x4xf32>
  return %2 : tensor<4x4xf32>
}
"""
#: One byte of that module's portable artifact that makes the installed jaxlib's bytecode reader
#: crash (SIGSEGV), found by trying one-byte edits: jaxlib 0.12's reader refuses the edit that
#: crashed 0.10's (a clean "Failed to deserialize") and crashes on another.
CRASHING_EDIT = (37, 21) if tuple(int(p) for p in jaxlib_version.__version__.split(".")[:2]) >= (0, 12) \
    else (337, 21)


def test_a_module_that_crashes_the_parser_is_refused_and_the_caller_keeps_running() -> None:
    from jax.extend import mlir as jex_mlir
    from jax.extend.mlir import ir
    from jax.interpreters import mlir

    with mlir.make_ir_context():
        module = bytearray(jex_mlir.serialize_portable_artifact(
            ir.Module.parse(CRASHING_TEXT), "1.15.0", False))
    record = decode_artifact(plain_blob())
    sound = dataclasses.replace(record, mlir_module_serialized=bytes(module), vjp=None)
    module[CRASHING_EDIT[0]] = CRASHING_EDIT[1]
    crashing = dataclasses.replace(sound, mlir_module_serialized=bytes(module))
    with pytest.raises(ArtifactError, match="verifying process stopped while parsing it"):
        jaxport.deserialize(encode_artifact(crashing), verify=True)
    # The caller is alive, and the next artifact gets a new verifying process that parses
    # the sound module (whose main does not match the record it was put in).
    reasons = verify_artifact(bytes(encode_artifact(sound))).reasons
    assert any("argument 0 of main of 'sin' has type tensor<4x3xf32>" in r for r in reasons), reasons


def test_a_bundle_function_with_a_custom_call_outside_the_allowlist_is_refused_at_load(
        tmp_path: Path) -> None:
    def with_weights(w: jax.Array, x: jax.Array) -> jax.Array:
        return with_custom_call(x) * w

    exp = jaxport.export(jax.jit(with_weights), disabled_checks=[
        DisabledSafetyCheck.custom_call("my_custom_target")])(SPEC, SPEC)
    weights = np.ones(4, np.float32)
    jaxport.save_bundle(tmp_path / "b", {"f": exp}, weights)
    with pytest.raises(ArtifactError, match="custom call to 'my_custom_target' is not allowed"):
        jaxport.load_bundle(tmp_path / "b")
    bundle = jaxport.load_bundle(tmp_path / "b", allowed_custom_calls=("my_custom_target",))
    assert bundle is not None
