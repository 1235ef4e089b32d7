"""What IREE cannot run is refused by to_iree before anything is compiled or written, naming the function and why."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.extend import mlir as jex_mlir
from jax.extend.mlir import ir
from jax.interpreters import mlir
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

import jaxport
from jaxport.adapters.flatbuffers.codec import decode_artifact, encode_artifact
from jaxport.domain.artifact.record import EffectRecord
from jaxport.errors import ConversionError
from tests.helpers.extras import requires_iree

pytestmark = requires_iree

F32 = jax.ShapeDtypeStruct((4, 3), jnp.float32)


def _save(exp: jaxport.Exported, path: Path) -> Path:
    jaxport.save(exp, path)
    return path


def lapack(path: Path) -> Path:
    square = jax.ShapeDtypeStruct((3, 3), jnp.float32)
    return _save(jaxport.export(jax.jit(jnp.linalg.solve), platforms=("cpu",))(square, square), path)


def with_module(path: Path, text: str, **changes: Any) -> Path:
    """The artifact of ``x + 1`` for f32[4, 3] with its module replaced by ``text`` (and ``changes``)."""
    record = decode_artifact(jaxport.export(jax.jit(lambda x: x + 1))(F32).serialize())
    if text:
        with mlir.make_ir_context():
            module = ir.Module.parse(text)
            changes["mlir_module_serialized"] = bytes(jex_mlir.serialize_portable_artifact(module, "1.15.0", False))
    path.write_bytes(encode_artifact(dataclasses.replace(record, **changes)))
    return path


CALLBACK = """module @jit_f {
  func.func public @main(%arg0: tensor<4x3xf32>) -> tensor<4x3xf32> {
    %0 = stablehlo.custom_call @xla_ffi_python_cpu_callback(%arg0) {api_version = 4 : i32, has_side_effect = true} : (tensor<4x3xf32>) -> tensor<4x3xf32>
    return %0 : tensor<4x3xf32>
  }
}"""


def sharded(path: Path) -> Path:
    mesh = Mesh(np.array(jax.devices()[:2]), ("x",))
    f = jax.jit(lambda x: x * 2, in_shardings=NamedSharding(mesh, P("x")), out_shardings=NamedSharding(mesh, P("x")))
    return _save(jaxport.export(f)(F32), path)


CASES: dict[str, tuple[Callable[[Path], Path], dict[str, Any], str]] = {
    "lapack": (lapack, {}, r"'solve' to IREE: its module calls the custom call 'lapack_sgetrf_ffi', a LAPACK "
                           r"kernel of JAX's CPU runtime \(behind jnp.linalg\), which IREE does not have"),
    "host callback": (lambda p: with_module(p, CALLBACK), {},
                      r"'<lambda>' to IREE: its module calls the custom call 'xla_ffi_python_cpu_callback', "
                      r"a host callback"),
    "ordered effects": (lambda p: with_module(p, "", ordered_effects=(EffectRecord("Printing"),)), {},
                        r"'<lambda>' to IREE: it has ordered effects \(Printing\)"),
    "several devices": (sharded, {}, r"'<lambda>' to IREE: its module is for 2 devices"),
    "dtype": (lambda p: _save(jaxport.export(jax.jit(lambda x: x.astype(jnp.int8)))(
        jax.ShapeDtypeStruct((4,), jnp.int4)), p), {}, r"\(args\[0\]\): int4\[4\] is the dtype int4, which IREE cannot hold"),
    "no cpu platform": (lambda p: _save(jaxport.export(jax.jit(lambda x: x + 1), platforms=("cuda",))(F32), p),
                        {}, r"exported for \['cuda'\] only"),
    "unknown triple": (lambda p: with_module(p, ""), {"target_triple": "foo-bar-baz"},
                       r"the source to IREE: IREE cannot compile for CPU 'generic' and triple 'foo-bar-baz'"),
    "unknown cpu": (lambda p: with_module(p, ""), {"target_cpu": "nonsense"},
                    r"IREE cannot compile for CPU 'nonsense' and triple 'host': Unknown CPU"),
    "symbolic without dims": (lambda p: _save(jaxport.export(jax.jit(lambda x: x + 1))(
        jax.ShapeDtypeStruct(jaxport.symbolic_shape("b, 3"), jnp.float32)), p), {},
        r"it has symbolic shapes \(dimension variables b\).*--dims <lambda>:b=8"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_what_iree_cannot_run_is_refused_before_anything_is_written(case: str, tmp_path: Path) -> None:
    make, options, message = CASES[case]
    artifact = make(tmp_path / "f.jaxport")
    with pytest.raises(ConversionError, match=message):
        jaxport.to_iree(artifact, tmp_path / "out", **options)
    assert not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["f.jaxport"]
