"""The verifying process parses and writes modules as JAX does, without importing JAX.

:func:`~jaxport.adapters.mlir.worker_main.check_module` runs here, in the
test process, on modules exported by jaxport and by ``jax.export`` (with
custom calls, Shardy shardings, symbolic shapes, VJP chains) and on the
older modules of JAX's own back-compat data; its bytes must equal those that
JAX's MLIR context and ``jax.extend.mlir`` write. A child process then serves
one request as the verifying process does and reports what it imported.
"""

from __future__ import annotations

import importlib
import io
import json
import pkgutil
import subprocess
import sys
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.extend import mlir as jex_mlir
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

import jaxport
from jaxport import DisabledSafetyCheck
from jaxport.adapters.flatbuffers.codec import decode_artifact
from jaxport.adapters.mlir.module import module_text, read_module
from jaxport.adapters.isolated.messages import read_message, write_message
from jaxport.adapters.mlir.worker_main import check_module
from jaxport.domain.artifact.record import ArtifactRecord
from jaxport.domain.artifact.module_format import stablehlo_version
from jaxport.domain.artifact.verification import ModuleFacts

SPEC = jax.ShapeDtypeStruct((4,), jnp.float32)
BACK_COMPAT = "jax._src.internal_test_util.export_back_compat_test_data"


def _chain(name: str, blob: bytes) -> list[tuple[str, bytes]]:
    """The modules of an artifact's VJP chain."""
    modules: list[tuple[str, bytes]] = []
    record: ArtifactRecord | None = decode_artifact(blob)
    while record is not None:
        modules.append((f"{name}-{len(modules)}", record.mlir_module_serialized))
        record = record.vjp
    return modules


def _with_custom_call(x: jax.Array) -> jax.Array:
    return jax.ffi.ffi_call("my_custom_target", jax.ShapeDtypeStruct(x.shape, x.dtype))(x) + 1.0


def _exported_modules() -> list[tuple[str, bytes]]:
    mesh = Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("data", "model"))
    sharding = NamedSharding(mesh, P("data", "model"))
    line = Mesh(np.array(jax.devices()[:8]), ("data",))

    @partial(jax.shard_map, mesh=line, in_specs=P("data"), out_specs=P())
    def total(x: jax.Array) -> jax.Array:
        summed: jax.Array = jax.lax.psum(x.sum(), "data")
        return summed

    b, = jaxport.symbolic_shape("b")
    exports: dict[str, Any] = {
        "sin": jaxport.export(jax.jit(jnp.sin))(SPEC).serialize(vjp_order=2),
        "ffi-custom-call": jaxport.export(jax.jit(_with_custom_call), disabled_checks=[
            DisabledSafetyCheck.custom_call("my_custom_target")])(SPEC).serialize(),
        "lapack": jaxport.export(jax.jit(jnp.linalg.inv))(
            jax.ShapeDtypeStruct((3, 3), jnp.float32)).serialize(),
        "sharded": jaxport.export(jax.jit(lambda x: x @ x.T, in_shardings=sharding,
                                          out_shardings=sharding))(
            jax.ShapeDtypeStruct((8, 8), jnp.float32)).serialize(vjp_order=1),
        "shard-map": jaxport.export(jax.jit(total))(jax.ShapeDtypeStruct((16,), jnp.float32)).serialize(),
        "symbolic-two-platforms": jaxport.export(jax.jit(lambda x: jnp.sum(x * 2)), platforms=(
            "cpu", "cuda"))(jax.ShapeDtypeStruct((b, 3), jnp.float32)).serialize(vjp_order=1),
        "jax.export": jax.export.export(jax.jit(lambda x: jnp.cumsum(jnp.cos(x))))(SPEC).serialize(
            vjp_order=1),
    }
    return [module for name, blob in exports.items() for module in _chain(name, bytes(blob))]


def _back_compat_modules() -> list[tuple[str, bytes]]:
    """One module of each file of JAX's back-compat data (older StableHLO, many custom calls)."""
    package = importlib.import_module(BACK_COMPAT)
    modules = []
    for info in pkgutil.iter_modules(package.__path__):
        if info.ispkg:
            continue
        found = _first_module(vars(importlib.import_module(f"{BACK_COMPAT}.{info.name}")))
        if found is not None:
            modules.append((info.name, found))
    return modules


def _first_module(nest: Any) -> bytes | None:
    if isinstance(nest, dict):
        if isinstance(nest.get("mlir_module_serialized"), bytes):
            return bytes(nest["mlir_module_serialized"])
        if isinstance(nest.get("exported_serialized"), (bytes, bytearray)):
            return decode_artifact(bytes(nest["exported_serialized"])).mlir_module_serialized
        values = [v for k, v in nest.items() if not str(k).startswith("__")]
    elif isinstance(nest, list):
        values = nest
    else:
        return None
    for value in values:
        if isinstance(value, (dict, list)):
            found = _first_module(value)
            if found is not None:
                return found
    return None


MODULES = _exported_modules() + _back_compat_modules()


def written_through_jax(module_bytes: bytes, sdy: bool) -> bytes:
    """The module parsed in JAX's own MLIR context and re-serialized by ``jax.extend.mlir``."""
    module = read_module(module_bytes)
    with module.context:
        version = stablehlo_version(module_bytes[:300]) or "1.0.0"
        return bytes(jex_mlir.serialize_portable_artifact(module, version, sdy))


def test_the_modules_cover_custom_calls_shardy_and_older_stablehlo_versions() -> None:
    assert len(MODULES) > 40
    texts = [module_text(blob) for _, blob in MODULES[:12]]
    assert any("sdy.sharding" in t for t in texts) and any("sdy.manual_computation" in t for t in texts)
    assert any("lapack_sgetrf_ffi" in t for t in texts)
    assert len({stablehlo_version(blob[:300]) for _, blob in MODULES}) > 5


@pytest.mark.parametrize("sdy", [False, True], ids=["plain", "mixed"])
@pytest.mark.parametrize("name, module_bytes", MODULES, ids=[name for name, _ in MODULES])
def test_the_verifying_process_writes_the_bytes_that_jax_writes(name: str, module_bytes: bytes,
                                                                sdy: bool) -> None:
    facts, again = check_module(module_bytes, sdy)
    assert again == written_through_jax(module_bytes, sdy)
    assert ModuleFacts.from_json(facts).results


PROBE = """
import json, sys
from jaxport.adapters.mlir import worker_main
status = worker_main.main(["worker_main", "0", "60"])
imported = sorted(name for name in sys.modules if name == "jax" or name.startswith("jax."))
print(json.dumps({"status": status, "jax": imported}))
"""


def test_the_verifying_process_serves_a_request_without_importing_jax() -> None:
    name, module_bytes = MODULES[0]
    request = io.BytesIO()
    write_message(request, {"sdy": True}, module_bytes)
    done = subprocess.run([sys.executable, "-c", PROBE], input=request.getvalue(),
                          capture_output=True, check=True)
    response = read_message(io.BytesIO(done.stdout), 1 << 20)
    assert response is not None, done.stderr
    facts, again = response
    assert ModuleFacts.from_json(json.dumps(facts).encode()) == ModuleFacts.from_json(
        check_module(module_bytes, True)[0])
    assert again == written_through_jax(module_bytes, True)
    # main() sends whatever else the process prints to stderr; the probe's line is the last.
    report = json.loads(done.stderr.decode().strip().splitlines()[-1])
    assert report == {"status": 0, "jax": []}
