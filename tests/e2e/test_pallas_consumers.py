"""End to end: a Pallas TPU kernel, lowered for ("tpu",) on this machine, written for each consumer.

Its Mosaic module is re-serialized by the verifying process for the Mosaic
version the consumer exports (and so reads), as MLIR text for a consumer older
than this JAX (whose MLIR does not read this MLIR's bytecode), or the artifact is
refused before anything is written; ``jaxport check --consumer`` gives the same verdict.
Reading and running the result on a TPU with the consumer's JAX: tools/tpu_check.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from jax.experimental import pallas as pl

import jaxport
from jaxport.adapters.mlir.rewrite import shared_forms
from jaxport.application.cli.main import main
from jaxport.application.verify_artifact import check_consumer
from jaxport.domain.artifact.consumers import CONSUMERS, Consumer
from jaxport.domain.artifact.kernels import BYTECODE, TEXT, Kernel, older_than_writer
from jaxport.errors import ConsumerMismatchError

SPEC = jax.ShapeDtypeStruct((8, 128), jnp.float32)


def add_kernel(x_ref: Any, y_ref: Any, o_ref: Any) -> None:
    o_ref[...] = x_ref[...] + y_ref[...]


def add(x: jax.Array, y: jax.Array) -> jax.Array:
    out: jax.Array = pl.pallas_call(add_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x, y)
    return out


@pytest.fixture(scope="module")
def exported() -> jaxport.Exported:
    return jaxport.export(jax.jit(add), platforms=("tpu",))(SPEC, SPEC)


def kernels(blob: bytes) -> tuple[Kernel, ...]:
    """The kernels of an artifact's module, as the verifying process reads them."""
    return shared_forms().kernels(jaxport.deserialize(blob).mlir_module_serialized)[1]


def test_the_kernel_is_exported_at_this_jaxs_mosaic_version_in_bytecode(exported: jaxport.Exported) -> None:
    this = next(c for c in CONSUMERS if c.runtime == "jax" and c.version == jax.__version__)
    (kernel,) = kernels(bytes(exported.serialize()))
    assert (kernel.target, kernel.name, kernel.mosaic, kernel.form) == (
        "tpu_custom_call", "add_kernel", this.mosaic, BYTECODE)
    assert kernel.producer is not None and kernel.producer.startswith("MLIR")


@pytest.mark.parametrize("consumer", [c for c in CONSUMERS if c.runtime == "jax"], ids=str)
def test_the_kernel_is_written_for_each_jax_consumers_mosaic_and_mlir_or_refused(
        exported: jaxport.Exported, consumer: Consumer) -> None:
    spec = f"jax=={consumer.version}"
    original = bytes(exported.serialize())
    (carried,) = kernels(original)
    assert consumer.mosaic is not None and carried.mosaic is not None
    older = older_than_writer(consumer.version, jax.__version__)
    reasons = "; ".join(check_consumer(original, spec).reasons)
    assert (f"JAX {consumer.version} reads Mosaic up to version {consumer.mosaic}" in reasons) \
        == (carried.mosaic > consumer.mosaic)
    assert (f"is MLIR bytecode written by {carried.producer} with JAX {jax.__version__}" in reasons) == older
    if consumer.serialization is not None and consumer.serialization < 5:
        with pytest.raises(ConsumerMismatchError, match="generation 5 for its device count"):
            exported.serialize(consumer=spec)  # its reader sees 0 devices: not the kernel's doing
        return
    written = bytes(exported.serialize(consumer=spec))
    mosaic = min(carried.mosaic, consumer.mosaic)
    assert kernels(written) == ((Kernel("tpu_custom_call", "add_kernel", mosaic, TEXT),) if older else
                                (Kernel("tpu_custom_call", "add_kernel", mosaic, BYTECODE, carried.producer),))
    assert check_consumer(written, spec).ok
    assert written == bytes(exported.serialize(consumer=spec))  # the same bytes each time


def test_the_kernel_as_text_is_the_downgraded_module_and_written_once(exported: jaxport.Exported) -> None:
    forms = shared_forms()
    module = exported.mlir_module_serialized
    as_bytecode, _ = forms.kernels(module, 11)
    as_text, found = forms.kernels(module, 11, text=True)
    assert found == (Kernel("tpu_custom_call", "add_kernel", 11, TEXT),)
    assert forms.kernels(as_bytecode, 11, text=True) == (as_text, found)  # text of the downgraded bytecode
    assert forms.kernels(as_text, 11, text=True) == (as_text, found)  # text stays as it is


def test_tensorflow_is_refused_naming_the_kernel(exported: jaxport.Exported) -> None:
    with pytest.raises(ConsumerMismatchError, match="the Pallas kernel 'add_kernel' .*the Mosaic versions that "
                                                    "TensorFlow 2.21.0 reads are not known"):
        exported.serialize(consumer="tf==2.21")


def test_check_consumer_on_the_command_line_shares_the_verdict(
        exported: jaxport.Exported, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    newest = tmp_path / "newest.jaxport"
    newest.write_bytes(exported.serialize())
    older = tmp_path / "older.jaxport"
    older.write_bytes(exported.serialize(consumer="jax==0.10.2"))
    capsys.readouterr()
    assert main(["check", str(newest), "--consumer", "jax==0.10.2"]) != 0
    assert "the Pallas kernel 'add_kernel'" in capsys.readouterr().out
    assert main(["check", str(older), "--consumer", "jax==0.10.2"]) == 0
